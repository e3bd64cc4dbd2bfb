import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkRoundTrip } from '@opkit/runtime/testing/roundtrip';
import { loadValidator } from '@opkit/testenv/cel';
import { AppServiceKind } from './appservice.ts';

test('v1alpha1 → v1 → v1alpha1 and v1 → v1alpha1 → v1 are lossless (fuzzed, 300 objects each way)', () => {
  checkRoundTrip(AppServiceKind, { numRuns: 300 });
});

test('v1alpha1 converts to v1 by moving the pod fields under spec.template and maxUnavailable under spec.rollout', () => {
  const v1 = AppServiceKind.convert(
    {
      apiVersion: 'app.example.com/v1alpha1',
      kind: 'AppService',
      metadata: { name: 'web', namespace: 'default', uid: 'u' },
      spec: { replicas: 2, image: 'nginx:1.27', command: ['nginx'], maxUnavailable: 1 },
      status: { replicas: 2 },
    } as never,
    'app.example.com/v1',
  );
  assert.deepEqual(v1, {
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'web', namespace: 'default', uid: 'u' },
    spec: { replicas: 2, template: { image: 'nginx:1.27', command: ['nginx'] }, rollout: { maxUnavailable: 1 } },
    status: { replicas: 2 },
  });
});

test('the CRD serves both versions, stores v1 and converts through the webhook', () => {
  const crd = AppServiceKind.crd({ conversion: { service: { namespace: 'ns', name: 'svc' } } });
  assert.deepEqual(
    crd.spec.versions.map((v) => `${v.name}:${v.served}:${v.storage}`),
    ['v1alpha1:true:false', 'v1:true:true'],
  );
  assert.equal(crd.spec.conversion?.strategy, 'Webhook');
});

test('the CEL rule on maxUnavailable, offline in both versions: refused above the replicas when set or changed, never on a scale-down', async () => {
  const v = await loadValidator();
  const crd = AppServiceKind.crd({ conversion: { url: 'https://127.0.0.1:9443/convert' } });
  assert.deepEqual(v.checkCrd(crd).problems, [], 'every rule compiles, within the cost budget');
  const app = (version: 'v1' | 'v1alpha1', replicas: number, maxUnavailable: number) => ({
    apiVersion: `app.example.com/${version}`,
    kind: 'AppService',
    metadata: { name: 'web', resourceVersion: '1' }, // an update needs one, as in the cluster
    spec:
      version === 'v1'
        ? { replicas, template: { image: 'nginx' }, rollout: { maxUnavailable } }
        : { replicas, image: 'nginx', maxUnavailable },
  });
  for (const version of ['v1', 'v1alpha1'] as const) {
    const field = version === 'v1' ? 'spec.rollout.maxUnavailable' : 'spec.maxUnavailable';
    assert.deepEqual(
      v.create(crd, app(version, 2, 3)).causes.map((c) => c.field),
      [field],
    );
    assert.equal(v.create(crd, app(version, 0, 1)).allowed, true, '1 with no replicas');
    assert.equal(v.update(crd, app(version, 1, 2), app(version, 8, 2)).allowed, true, 'a scale-down keeps it');
    assert.equal(v.update(crd, app(version, 1, 3), app(version, 1, 1)).allowed, false, 'raised above the replicas');
  }
});
