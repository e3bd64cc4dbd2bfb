/**
 * Self-managed webhook certificates on a real control plane: the apiserver calls a validating webhook while the
 * serving certificate and the CA rotate every few seconds; no request may fail.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import type { Client } from '../src/client/client.ts';
import { resource } from '../src/client/resource.ts';
import { fieldErrors, validator } from '../src/webhook/admission.ts';
import { CertificateRotator, SecretCertificates, selfManagedRbac } from '../src/webhook/selfmanaged.ts';
import { WebhookServer } from '../src/webhook/server.ts';
import { installWidgetCrd, startEnv, type Widget, Widgets } from './support.ts';

let env: Environment;
let client: Client;

const Configs = resource({
  group: 'admissionregistration.k8s.io',
  version: 'v1',
  kind: 'ValidatingWebhookConfiguration',
  plural: 'validatingwebhookconfigurations',
  namespaced: false,
});

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

before(async () => {
  ({ env, client } = await startEnv());
  await installWidgetCrd(client);
});

after(async () => {
  await env?.stop();
});

test('self-managed certificates: the CA and the serving certificate rotate during traffic and no request fails', async (t) => {
  const port = await freePort();
  await client.create(Configs, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'widgets-webhook' },
    webhooks: [
      {
        name: 'vwidget.test.opkit.dev',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        timeoutSeconds: 5,
        clientConfig: { url: `https://127.0.0.1:${port}/validate-widget` },
        rules: [{ apiGroups: ['test.opkit.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] }],
      },
    ],
  } as never);
  const options = {
    client,
    namespace: 'default',
    secretName: 'widgets-webhook-certs',
    hosts: ['127.0.0.1'],
    validatingWebhookConfigurations: ['widgets-webhook'],
    caValidityMs: 15_000,
    certValidityMs: 6_000,
    checkIntervalMs: 500,
    pollIntervalMs: 200,
    propagationMs: 1_500,
  };
  const stop = new AbortController();
  const rotator = new CertificateRotator(options);
  await rotator.reconcile();
  const rotating = rotator.start(stop.signal);
  const certs = new SecretCertificates(options);
  const server = new WebhookServer({ bindAddress: `127.0.0.1:${port}`, certificates: certs });
  server.admission(
    '/validate-widget',
    validator(Widgets, {
      create: (w: Widget) => ({
        errors: w.spec?.color === 'red' ? [fieldErrors.forbidden('spec.color', 'no red widgets')] : [],
      }),
    }),
  );
  const serving = server.start(stop.signal);
  const served = new Set<string>();
  const cas = new Set<string>();
  certs.onChange((p) => {
    served.add(new X509Certificate(p.certPem).serialNumber);
    cas.add(new X509Certificate(p.certPem).issuer);
  });
  try {
    // the webhook denies red widgets: proof that the apiserver really calls it
    let up = false;
    let last = '';
    for (let i = 0; i < 100 && !up; i++) {
      up = await client
        .create(
          Widgets,
          { metadata: { name: 'probe', namespace: 'default' }, spec: { color: 'blue' } },
          { dryRun: true },
        )
        .then(() => true)
        .catch((err: Error) => {
          last = err.message;
          return false;
        });
      if (!up) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(up, `the webhook answers (last error: ${last})`);
    await assert.rejects(
      client.create(
        Widgets,
        { metadata: { name: 'r', namespace: 'default' }, spec: { color: 'red' } },
        { dryRun: true },
      ),
      /spec\.color: Forbidden: no red widgets/,
    );

    let sent = 0;
    const failures: string[] = [];
    const until = Date.now() + 16_000;
    const worker = async (n: number) => {
      while (Date.now() < until) {
        sent++;
        await client
          .create(
            Widgets,
            { metadata: { name: `w${n}`, namespace: 'default' }, spec: { color: 'blue' } },
            { dryRun: true },
          )
          .catch((err: Error) => failures.push(err.message));
      }
    };
    await Promise.all([worker(1), worker(2), worker(3)]);
    assert.ok(served.size >= 3, `the serving certificate rotated (${served.size} new pairs served)`);
    assert.ok(cas.size >= 2, `the CA rotated (${cas.size} issuers seen)`);
    assert.ok(sent > 100, `traffic flowed (${sent} requests)`);
    t.diagnostic(`${sent} requests, ${served.size} serving pairs, ${cas.size} CAs, ${failures.length} failed`);
    assert.deepEqual(failures.slice(0, 3), [], `${failures.length} of ${sent} requests failed`);
  } finally {
    stop.abort();
    await Promise.all([rotating, serving]);
  }
});

test('selfManagedRbac names exactly the Secret, configurations and CRDs it touches', () => {
  const [role, clusterRole] = selfManagedRbac('op', {
    namespace: 'op-system',
    secretName: 'op-webhook-certs',
    validatingWebhookConfigurations: ['op-validating'],
    crds: ['things.x.example.com'],
  }) as unknown as [{ rules: unknown[] }, { rules: unknown[] }];
  assert.deepEqual(role.rules, [
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['op-webhook-certs'], verbs: ['get', 'update'] },
    { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
  ]);
  assert.deepEqual(clusterRole.rules, [
    {
      apiGroups: ['admissionregistration.k8s.io'],
      resources: ['validatingwebhookconfigurations'],
      resourceNames: ['op-validating'],
      verbs: ['get', 'patch'],
    },
    {
      apiGroups: ['apiextensions.k8s.io'],
      resources: ['customresourcedefinitions'],
      resourceNames: ['things.x.example.com'],
      verbs: ['get', 'patch'],
    },
  ]);
});
