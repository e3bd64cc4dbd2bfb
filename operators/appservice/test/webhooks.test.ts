/**
 * End to end through kubectl, with the operator process serving the webhooks (admission and conversion) on loopback
 * and testenv's `installWebhooks` pointing the configurations and the CRD's conversion at it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { Client, loadConfig } from '@opkit/runtime/client';
import { type Environment, type InstalledWebhooks, start, waitFor } from '@opkit/testenv';
import { installApiAndRbac, installObjects, NAME, NAMESPACE } from '../src/install.ts';
import { ALLOWED_REGISTRIES } from '../src/webhooks.ts';
import { type Cluster, type OperatorProcess, operator } from './support.ts';

let c: Cluster;
let hooks: InstalledWebhooks;
let op: OperatorProcess | undefined;
let env: Environment | undefined;

function kubectl(args: string[], input?: string): { code: number | null; stdout: string; stderr: string } {
  const bin = c.env.binaries.kubectl ?? 'kubectl';
  const r = spawnSync(bin, ['--kubeconfig', c.env.kubeconfigPath, ...args], {
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const apply = (manifest: object) => kubectl(['apply', '-f', '-'], JSON.stringify(manifest));

before(async () => {
  env = await start({ nodes: 1, log: () => {} });
  const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'webhook-e2e' });
  await installApiAndRbac(admin, { webhooks: 'none' });
  const configurations = (await installObjects()).filter((o) => o.kind?.endsWith('WebhookConfiguration'));
  assert.equal(configurations.length, 2, 'dist/install.yaml has the mutating and validating configurations');
  hooks = await env.installWebhooks({ configurations, conversions: ['appservices.app.example.com'] });
  const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
  c = { env, admin, operatorKubeconfig: sa.path };
  op = operator(c, ['--webhook-bind-address', `127.0.0.1:${hooks.port}`, '--webhook-cert-dir', hooks.certDir], {
    ENABLE_WEBHOOKS: 'true',
  });
  for (const ns of ['hooks', 'locked']) kubectl(['create', 'namespace', ns]);
  kubectl(['annotate', 'namespace', 'locked', `${ALLOWED_REGISTRIES}=registry.example.com,docker.io/library`]);
  // ready once the webhooks answer: a dry-run create goes through the mutating and validating webhooks
  await waitFor(
    'the operator serving webhooks',
    async () =>
      apply({
        apiVersion: 'app.example.com/v1',
        kind: 'AppService',
        metadata: { name: 'probe', namespace: 'hooks' },
        spec: { template: { image: 'busybox:1.36' } },
      }).code === 0,
    60_000,
    500,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\noperator log: ${op?.log.slice(-2_000)}`);
  });
});

after(async () => {
  await op?.stop();
  await env?.stop();
});

test('a defaulted field appears: spec.rollout.maxUnavailable is a quarter of the replicas', () => {
  const r = apply({
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'web', namespace: 'hooks' },
    spec: { replicas: 8, template: { image: 'nginx:1.27' } },
  });
  assert.equal(r.code, 0, r.stderr);
  const got = kubectl([
    'get',
    'appservices.v1.app.example.com',
    'web',
    '-n',
    'hooks',
    '-o',
    'jsonpath={.spec.rollout.maxUnavailable}',
  ]);
  assert.equal(got.stdout, '2');
});

test('an invalid object is refused with the field named', () => {
  const r = apply({
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'evil', namespace: 'locked' },
    spec: { template: { image: 'evil.example.net/miner:1.0' } },
  });
  assert.notEqual(r.code, 0);
  // kubectl prints the status' field causes: `The AppService "evil" is invalid: <field>: <message>`
  assert.match(r.stderr, /The AppService "evil" is invalid: /);
  assert.match(
    r.stderr,
    /spec\.template\.image: Invalid value: "evil\.example\.net\/miner:1\.0": evil\.example\.net\/miner is not from a registry namespace locked allows/,
  );
  assert.equal(kubectl(['get', 'appservice', 'evil', '-n', 'locked']).code, 1, 'nothing was stored');
});

test('a warning is printed', () => {
  const r = apply({
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'floating', namespace: 'locked' },
    spec: { template: { image: 'registry.example.com/team/app' } },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /Warning: spec\.template\.image: "registry\.example\.com\/team\/app" has no fixed tag/);
});

test('a v1alpha1 object is stored as v1, read as v1 and back as v1alpha1 unchanged', async () => {
  const alpha = {
    apiVersion: 'app.example.com/v1alpha1',
    kind: 'AppService',
    metadata: { name: 'old', namespace: 'hooks' },
    spec: {
      replicas: 3,
      image: 'nginx:1.27',
      args: ['--port', '8080'],
      env: [{ name: 'MODE', value: 'prod' }],
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      maxUnavailable: 2,
    },
  };
  const created = apply(alpha);
  assert.equal(created.code, 0, created.stderr);
  assert.match(
    created.stderr,
    /Warning: app\.example\.com\/v1alpha1 AppService is deprecated; use app\.example\.com\/v1/,
  );

  const v1 = JSON.parse(
    kubectl(['get', 'appservices.v1.app.example.com', 'old', '-n', 'hooks', '-o', 'json']).stdout,
  ) as {
    apiVersion: string;
    spec: Record<string, unknown>;
  };
  assert.equal(v1.apiVersion, 'app.example.com/v1');
  assert.deepEqual(v1.spec, {
    replicas: 3,
    template: {
      image: 'nginx:1.27',
      args: ['--port', '8080'],
      env: [{ name: 'MODE', value: 'prod' }],
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
    },
    rollout: { maxUnavailable: 2 },
  });

  const back = JSON.parse(
    kubectl(['get', 'appservices.v1alpha1.app.example.com', 'old', '-n', 'hooks', '-o', 'json']).stdout,
  ) as { apiVersion: string; spec: Record<string, unknown> };
  assert.equal(back.apiVersion, 'app.example.com/v1alpha1');
  assert.deepEqual(back.spec, alpha.spec);

  const stored = (await c.env.etcdValue('/registry/app.example.com/appservices/hooks/old')) as { apiVersion: string };
  assert.equal(stored.apiVersion, 'app.example.com/v1', 'etcd holds the v1 form');
});

test('kubectl get appservices.v1alpha1.app.example.com still answers, and the controller reconciles', async () => {
  const list = kubectl(['get', 'appservices.v1alpha1.app.example.com', '-n', 'hooks']);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^old\s+3\s/m);
  await waitFor(
    'status.replicas 3 on the v1alpha1-created AppService',
    async () =>
      kubectl(['get', 'appservices.v1.app.example.com', 'old', '-n', 'hooks', '-o', 'jsonpath={.status.replicas}'])
        .stdout === '3',
    60_000,
    250,
  );
});

test('webhook down under failurePolicy Fail: writes are refused with a clear message, nothing is lost, it recovers', async () => {
  const before = kubectl(['get', 'appservices.v1.app.example.com', '-n', 'hooks', '-o', 'json']).stdout;
  await op?.stop('SIGKILL');
  const refused = apply({
    apiVersion: 'app.example.com/v1',
    kind: 'AppService',
    metadata: { name: 'while-down', namespace: 'hooks' },
    spec: { template: { image: 'nginx:1.27' } },
  });
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /failed calling webhook "mappservice-v1\.app\.example\.com"/);
  assert.match(refused.stderr, /connection refused/);
  // what is stored is untouched, and the storage version still reads without the webhook
  assert.equal(kubectl(['get', 'appservices.v1.app.example.com', '-n', 'hooks', '-o', 'json']).stdout, before);

  op = operator(c, ['--webhook-bind-address', `127.0.0.1:${hooks.port}`, '--webhook-cert-dir', hooks.certDir], {
    ENABLE_WEBHOOKS: 'true',
  });
  await waitFor(
    'the restarted operator to serve webhooks',
    async () =>
      apply({
        apiVersion: 'app.example.com/v1',
        kind: 'AppService',
        metadata: { name: 'while-down', namespace: 'hooks' },
        spec: { template: { image: 'nginx:1.27' } },
      }).code === 0,
    60_000,
    250,
  );
  const old = kubectl([
    'get',
    'appservices.v1alpha1.app.example.com',
    'old',
    '-n',
    'hooks',
    '-o',
    'jsonpath={.spec.image}',
  ]);
  assert.match(old.stdout, /^nginx:1\.27$/, 'conversion works again');
});
