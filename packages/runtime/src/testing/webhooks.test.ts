import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../client/resource.ts';
import type { ConversionRequest } from '../webhook/conversion.ts';
import { TestingError } from './errors.ts';
import { probing, webhookInstaller, withProbe } from './webhooks.ts';

test('a cluster without installWebhooks: WebhooksUnsupported, naming what to use', () => {
  assert.throws(
    () => webhookInstaller({}),
    (err: unknown) =>
      err instanceof TestingError && err.code === 'WebhooksUnsupported' && /@opkit\/testenv/.test(err.message),
  );
  const calls: unknown[] = [];
  const cluster = {
    installWebhooks(this: unknown, o: unknown) {
      calls.push([this, o]);
      return Promise.resolve({ uninstall: async () => {} });
    },
  };
  const install = webhookInstaller(cluster);
  void install({ configurations: [], conversions: [], conversionPath: '/c', serve: async () => 1 });
  assert.equal((calls[0] as unknown[])[0], cluster, 'called as a method of the cluster');
});

const review = (objects: unknown[]): ConversionRequest => ({
  uid: 'u1',
  desiredAPIVersion: 'example.com/v2',
  objects,
});

test('the probing converter answers probe objects itself and notes them; every other review goes to the kinds', async () => {
  const woken = new Set<string>();
  const delegated: ConversionRequest[] = [];
  const convert = probing(async (request) => {
    delegated.push(request);
    return { uid: request.uid, convertedObjects: [], result: { status: 'Success' } };
  }, woken);
  const signal = new AbortController().signal;
  const probeObject = {
    apiVersion: 'example.com/v1',
    kind: 'Pet',
    metadata: { name: 'webhook-probe-conversion-0', labels: { 'testing.opkit.dev/webhook-probe': 'conversion-0' } },
  };
  const answer = await convert(review([probeObject]), { signal });
  assert.deepEqual(answer.convertedObjects, [{ ...probeObject, apiVersion: 'example.com/v2' }]);
  assert.deepEqual([...woken], ['conversion-0']);
  assert.equal(delegated.length, 0, 'the kinds never see a probe object');

  await convert(review([{ apiVersion: 'example.com/v1', kind: 'Pet', metadata: { name: 'tom' } }]), { signal });
  await convert(review([probeObject, { apiVersion: 'example.com/v1', kind: 'Pet', metadata: { name: 'tom' } }]), {
    signal,
  });
  assert.equal(delegated.length, 2, 'a real object (alone or beside a probe) is converted by the kinds');
});

test('withProbe adds one webhook that matches only its own probe ConfigMaps, fails open; the others skip probes', () => {
  const config: KubeObject & { webhooks: unknown[] } = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'pets-mutating-webhook-configuration' },
    webhooks: [
      { name: 'mpet-v1.example.com' },
      { name: 'mcat-v1.example.com', objectSelector: { matchExpressions: [{ key: 'a', operator: 'Exists' }] } },
    ],
  };
  const probed = withProbe(config, 'admission-0');
  const skip = { key: 'testing.opkit.dev/webhook-probe', operator: 'DoesNotExist' };
  assert.equal(probed.webhooks?.length, 3);
  assert.deepEqual(probed.webhooks?.[0], { name: 'mpet-v1.example.com', objectSelector: { matchExpressions: [skip] } });
  assert.deepEqual(probed.webhooks?.[1], {
    name: 'mcat-v1.example.com',
    objectSelector: { matchExpressions: [{ key: 'a', operator: 'Exists' }, skip] },
  });
  const probe = probed.webhooks?.[2] as Record<string, unknown>;
  assert.equal(probe.failurePolicy, 'Ignore');
  assert.equal(probe.sideEffects, 'None');
  assert.deepEqual(probe.objectSelector, { matchLabels: { 'testing.opkit.dev/webhook-probe': 'admission-0' } });
  assert.deepEqual(probe.rules, [
    { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'], scope: '*' },
  ]);
  assert.equal(config.webhooks.length, 2, 'the input is not modified');
  assert.deepEqual(config.webhooks[0], { name: 'mpet-v1.example.com' });
});
