/**
 * Webhooks served to a real apiserver: self-managed certificates (the serving certificate and the CA rotate every few
 * seconds under traffic; no request may fail), and what the apiserver makes of each kind of answer — a handler slower
 * than `timeoutSeconds`, a handler that throws, a request too large for the server, a v1beta1 review — under
 * `failurePolicy: Ignore` and `Fail`.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:net';
import { after, before, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import type { Client } from '../src/client/client.ts';
import { type KubeObject, resource } from '../src/client/resource.ts';
import { Registry } from '../src/prometheus.ts';
import { createCertificateAuthority, issueServingCertificate, StaticCertificates } from '../src/tls/index.ts';
import { type AdmissionHandler, allow, fieldErrors, validator } from '../src/webhook/admission.ts';
import { CertificateRotator, SecretCertificates, selfManagedRbac } from '../src/webhook/selfmanaged.ts';
import { WebhookServer } from '../src/webhook/server.ts';
import { parseMetrics, sumOf } from './metrics-parse.ts';
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
    // a Fail webhook with nothing behind it would refuse every later Widget create
    await client.delete(Configs, { name: 'widgets-webhook' });
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

type WebhookType = 'validating' | 'mutating';

interface WebhookConfiguration extends KubeObject {
  webhooks: {
    name: string;
    admissionReviewVersions: string[];
    sideEffects: 'None';
    failurePolicy: 'Fail' | 'Ignore';
    timeoutSeconds: number;
    clientConfig: { url: string; caBundle: string };
    rules: { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }[];
    objectSelector: { matchLabels: Record<string, string> };
  }[];
}

const configurations: Record<WebhookType, ReturnType<typeof resource<WebhookConfiguration>>> = {
  validating: resource<WebhookConfiguration>({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'ValidatingWebhookConfiguration',
    plural: 'validatingwebhookconfigurations',
    namespaced: false,
  }),
  mutating: resource<WebhookConfiguration>({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind: 'MutatingWebhookConfiguration',
    plural: 'mutatingwebhookconfigurations',
    namespaced: false,
  }),
};

/** One webhook of a test: its own path, configuration and object label, so cases never see each other's writes. */
interface Case {
  readonly name: string;
  readonly type: WebhookType;
  readonly failurePolicy: 'Fail' | 'Ignore';
  readonly handler: AdmissionHandler;
  readonly timeoutSeconds?: number;
  readonly reviewVersions?: string[];
  readonly annotations?: Record<string, string>;
  readonly spec?: Widget['spec'];
}

interface Outcome {
  /** The apiserver's error for the dry-run create, or undefined when it was admitted. */
  readonly error: string | undefined;
}

/**
 * Serves each case's handler at `/<name>` on a fresh WebhookServer, registers a configuration for it, and makes one
 * dry-run create of a Widget labelled for that case once the apiserver calls the webhook (writes before the
 * configuration is in effect are not counted: the server must have answered a call at the case's path).
 */
async function throughApiserver(
  cases: readonly Case[],
  serverOptions: { maxBodyBytes?: number } = {},
): Promise<Map<string, Outcome>> {
  const ca = createCertificateAuthority('webhook-policy-test-ca');
  const registry = new Registry();
  const server = new WebhookServer({
    bindAddress: '127.0.0.1:0',
    certificates: new StaticCertificates(issueServingCertificate(ca, ['127.0.0.1'])),
    registry,
    ...serverOptions,
  });
  for (const c of cases) server.admission(`/${c.name}`, c.handler);
  // what the server answered at a path, whether or not the request reached the handler
  const answered = (c: Case) =>
    sumOf(parseMetrics(registry.metrics()), 'controller_runtime_webhook_requests_total', { webhook: `/${c.name}` });
  const stop = new AbortController();
  const serving = server.start(stop.signal);
  const outcomes = new Map<string, Outcome>();
  try {
    await server.listening;
    for (const c of cases) {
      await client.create(configurations[c.type], {
        metadata: { name: c.name },
        webhooks: [
          {
            name: `${c.name}.test.opkit.dev`,
            admissionReviewVersions: c.reviewVersions ?? ['v1'],
            sideEffects: 'None',
            failurePolicy: c.failurePolicy,
            timeoutSeconds: c.timeoutSeconds ?? 1,
            clientConfig: {
              url: `https://127.0.0.1:${server.port}/${c.name}`,
              caBundle: Buffer.from(ca.certPem).toString('base64'),
            },
            rules: [
              { apiGroups: ['test.opkit.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] },
            ],
            objectSelector: { matchLabels: { 'webhook-case': c.name } },
          },
        ],
      });
    }
    for (const c of cases) {
      let outcome: Outcome | undefined;
      for (let i = 0; i < 100 && !outcome; i++) {
        const before = answered(c);
        const error = await client
          .create(
            Widgets,
            {
              metadata: {
                name: c.name,
                namespace: 'default',
                labels: { 'webhook-case': c.name },
                ...(c.annotations ? { annotations: c.annotations } : {}),
              },
              spec: c.spec ?? {},
            },
            { dryRun: true },
          )
          .then(
            () => undefined,
            (err: Error) => err.message,
          );
        if (answered(c) > before) outcome = { error };
        else await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(outcome, `the apiserver called the ${c.name} webhook`);
      outcomes.set(c.name, outcome);
    }
  } finally {
    for (const c of cases) await client.delete(configurations[c.type], { name: c.name }).catch(() => undefined);
    stop.abort();
    await serving;
  }
  return outcomes;
}

/** A handler stuck for longer than any apiserver timeout of these tests, heedless of its signal. */
const stuck: AdmissionHandler = async (request) => {
  await new Promise((r) => setTimeout(r, 3_000));
  return allow(request.uid);
};

test('a handler slower than timeoutSeconds fails the call, not the write: Ignore admits, Fail refuses naming the webhook', async () => {
  const cases: Case[] = [
    { name: 'slow-validating-ignore', type: 'validating', failurePolicy: 'Ignore', handler: stuck },
    { name: 'slow-validating-fail', type: 'validating', failurePolicy: 'Fail', handler: stuck },
    { name: 'slow-mutating-ignore', type: 'mutating', failurePolicy: 'Ignore', handler: stuck },
    { name: 'slow-mutating-fail', type: 'mutating', failurePolicy: 'Fail', handler: stuck },
  ];
  const outcomes = await throughApiserver(cases);
  for (const type of ['validating', 'mutating']) {
    assert.equal(outcomes.get(`slow-${type}-ignore`)?.error, undefined, `${type}, Ignore: the write passes`);
    assert.match(
      outcomes.get(`slow-${type}-fail`)?.error ?? 'admitted',
      new RegExp(
        `^POST \\S+: Internal error occurred: failed calling webhook "slow-${type}-fail\\.test\\.opkit\\.dev": failed to call webhook: the admission handler at /slow-${type}-fail did not answer within 750 ms \\(the apiserver's timeout: 1s\\)$`,
      ),
      `${type}, Fail: the write is refused as a failed call`,
    );
  }
});

test('a handler that throws denies the write whatever the failurePolicy, as controller-runtime answers a recovered panic', async () => {
  const boom: AdmissionHandler = async () => {
    throw new Error('lookup of the quota failed');
  };
  const outcomes = await throughApiserver([
    { name: 'throws-ignore', type: 'validating', failurePolicy: 'Ignore', handler: boom },
    { name: 'throws-fail', type: 'mutating', failurePolicy: 'Fail', handler: boom },
  ]);
  for (const name of ['throws-ignore', 'throws-fail']) {
    assert.match(
      outcomes.get(name)?.error ?? 'admitted',
      new RegExp(
        `^POST \\S+: admission webhook "${name}\\.test\\.opkit\\.dev" denied the request: the admission handler at /${name} failed: lookup of the quota failed$`,
      ),
    );
  }
});

test('a request larger than maxBodyBytes is answered in a review without a uid, which the apiserver counts as a failed call', async () => {
  const big = { note: 'x'.repeat(8 * 1024) };
  const handler: AdmissionHandler = async (request) => allow(request.uid);
  const outcomes = await throughApiserver(
    [
      { name: 'big-ignore', type: 'validating', failurePolicy: 'Ignore', handler, annotations: big },
      { name: 'big-fail', type: 'validating', failurePolicy: 'Fail', handler, annotations: big },
    ],
    { maxBodyBytes: 4 * 1024 },
  );
  assert.equal(outcomes.get('big-ignore')?.error, undefined, 'Ignore: the write passes');
  assert.match(
    outcomes.get('big-fail')?.error ?? 'admitted',
    /^POST \S+: Internal error occurred: failed calling webhook "big-fail\.test\.opkit\.dev": received invalid webhook response: expected response\.uid="[^"]+", got ""$/,
    'Fail: the write is refused as a failed call',
  );
});

test('a webhook configured for admission.k8s.io/v1beta1 reviews is answered in v1beta1', async () => {
  const noRed = validator(Widgets, {
    create: (w: Widget) => ({
      errors: w.spec?.color === 'red' ? [fieldErrors.forbidden('spec.color', 'no red widgets')] : [],
    }),
  });
  const outcomes = await throughApiserver([
    {
      name: 'v1beta1-red',
      type: 'validating',
      failurePolicy: 'Fail',
      handler: noRed,
      reviewVersions: ['v1beta1'],
      spec: { color: 'red' },
    },
    {
      name: 'v1beta1-blue',
      type: 'validating',
      failurePolicy: 'Fail',
      handler: noRed,
      reviewVersions: ['v1beta1'],
      spec: { color: 'blue' },
    },
  ]);
  assert.match(
    outcomes.get('v1beta1-red')?.error ?? 'admitted',
    /^POST \S+: admission webhook "v1beta1-red\.test\.opkit\.dev" denied the request: Widget\.test\.opkit\.dev "v1beta1-red" is invalid: spec\.color: Forbidden: no red widgets$/,
  );
  assert.equal(outcomes.get('v1beta1-blue')?.error, undefined);
});
