/**
 * The AppService webhooks (admission and conversion) end to end through kubectl, in two parts:
 * - served by a test manager (`startTestManager({ webhooks })`) that runs the controller and the webhooks as main.ts
 *   does: defaults, refusals with the field named, warnings, conversion both ways, reconciles of v1alpha1 objects,
 *   and the CRD's CEL rule, refused by the apiserver as the offline validator (@opkit/testenv/cel) predicts;
 * - served by the operator process on the port and certificate testenv's `installWebhooks` gives it (its
 *   `--webhook-bind-address` and `--webhook-cert-dir` flags): killed, writes are refused under `failurePolicy: Fail`
 *   with nothing lost, and a restart recovers.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import { Client, loadConfig } from '@opkit/runtime/client';
import { startTestManager, type TestManager } from '@opkit/runtime/testing';
import { type Environment, type InstalledWebhooks, start, waitFor } from '@opkit/testenv';
import { loadValidator } from '@opkit/testenv/cel';
import { AppServiceKind, AppServicesV1 } from '../src/api/appservice.ts';
import { permissions as controllerPermissions, setupAppServiceController } from '../src/controllers/appservice.ts';
import { installApiAndRbac, installObjects, NAME, NAMESPACE } from '../src/install.ts';
import {
  ALLOWED_REGISTRIES,
  conversions,
  setupAppServiceWebhooks,
  permissions as webhookPermissions,
  webhooks,
} from '../src/webhooks.ts';
import { type Cluster, type OperatorProcess, operator } from './support.ts';

let env: Environment;

/**
 * kubectl, run without blocking this process: the test manager's webhook server answers the apiserver from this
 * event loop (a spawnSync would hold its calls until they time out).
 */
function kubectl(args: string[], input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = env.binaries.kubectl ?? 'kubectl';
  return new Promise((resolve, reject) => {
    const p = spawn(bin, ['--kubeconfig', env.kubeconfigPath, ...args]);
    let stdout = '';
    let stderr = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    p.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
    p.stdin.end(input ?? '');
  });
}

const apply = (manifest: object) => kubectl(['apply', '-f', '-'], JSON.stringify(manifest));

before(async () => {
  env = await start({ nodes: 1, log: () => {} });
  for (const ns of ['hooks', 'locked']) await kubectl(['create', 'namespace', ns]);
  await kubectl(['annotate', 'namespace', 'locked', `${ALLOWED_REGISTRIES}=registry.example.com,docker.io/library`]);
});

after(async () => {
  await env?.stop();
});

describe('served by a test manager', () => {
  let op: TestManager | undefined;
  before(async () => {
    // the webhooks as main.ts serves them (their Namespace lookups read the manager's cache); the configurations
    // and the CRD's conversion are in force once this resolves
    op = await startTestManager(env, {
      name: NAME,
      kinds: [AppServiceKind],
      permissions: [...controllerPermissions, ...webhookPermissions],
      setup: (mgr) => {
        setupAppServiceController(mgr);
        setupAppServiceWebhooks(mgr);
      },
      webhooks: { admission: webhooks(), conversion: conversions },
    });
  });
  after(async () => {
    await op?.stop();
  });

  test('a CEL rule of the CRD refuses maxUnavailable above replicas: kubectl shows the rule, and the offline validator gives the same error', async () => {
    const wide = {
      apiVersion: 'app.example.com/v1',
      kind: 'AppService',
      metadata: { name: 'wide', namespace: 'hooks' },
      spec: { replicas: 2, template: { image: 'nginx:1.27' }, rollout: { maxUnavailable: 3 } },
    };
    const refused = await apply(wide);
    assert.notEqual(refused.code, 0);
    // the CRD as the apiserver serves it, evaluated offline
    const crd = await env.api.request<object>({
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/appservices.app.example.com',
    });
    const offline = (await loadValidator()).create(crd.body, wide);
    assert.equal(offline.allowed, false);
    assert.deepEqual(
      offline.causes.map((c) => `${c.field}: ${c.message}`),
      [
        'spec.rollout.maxUnavailable: Invalid value: may not exceed replicas (1 when replicas is 0) when it is set or changed',
      ],
    );
    // kubectl prints the apiserver's 422 as `The AppService "wide" is invalid: <field>: <message>`
    const [cause] = offline.causes;
    assert.match(refused.stderr, /The AppService "wide" is invalid: /);
    assert.ok(refused.stderr.includes(`${cause?.field}: ${cause?.message}`), refused.stderr);
    // within the replicas it is stored; scaling down below it later is allowed (the rule passes an unchanged value)
    assert.equal((await apply({ ...wide, spec: { ...wide.spec, replicas: 4 } })).code, 0);
    assert.equal((await apply({ ...wide, spec: { ...wide.spec, replicas: 1 } })).code, 0);
  });

  test('a defaulted field appears: spec.rollout.maxUnavailable is a quarter of the replicas', async () => {
    const r = await apply({
      apiVersion: 'app.example.com/v1',
      kind: 'AppService',
      metadata: { name: 'web', namespace: 'hooks' },
      spec: { replicas: 8, template: { image: 'nginx:1.27' } },
    });
    assert.equal(r.code, 0, r.stderr);
    const got = await kubectl([
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

  test('an invalid object is refused with the field named', async () => {
    const r = await apply({
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
    assert.equal((await kubectl(['get', 'appservice', 'evil', '-n', 'locked'])).code, 1, 'nothing was stored');
    // the same refusal through the client: an ApiError with the webhook's field cause
    const refused = await op?.client
      .create(AppServicesV1, {
        metadata: { name: 'evil', namespace: 'locked' },
        spec: { replicas: 1, template: { image: 'evil.example.net/miner:1.0' } },
      })
      .catch((err: unknown) => err);
    assert.ok(refused instanceof ApiError, String(refused));
    assert.equal(refused.code, 'Invalid');
    assert.deepEqual(
      refused.causes.map((cause) => [cause.field, cause.reason]),
      [['spec.template.image', 'FieldValueInvalid']],
    );
  });

  test('a warning is printed', async () => {
    const r = await apply({
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
    const created = await apply(alpha);
    assert.equal(created.code, 0, created.stderr);
    assert.match(
      created.stderr,
      /Warning: app\.example\.com\/v1alpha1 AppService is deprecated; use app\.example\.com\/v1/,
    );

    const v1 = JSON.parse(
      (await kubectl(['get', 'appservices.v1.app.example.com', 'old', '-n', 'hooks', '-o', 'json'])).stdout,
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
      (await kubectl(['get', 'appservices.v1alpha1.app.example.com', 'old', '-n', 'hooks', '-o', 'json'])).stdout,
    ) as { apiVersion: string; spec: Record<string, unknown> };
    assert.equal(back.apiVersion, 'app.example.com/v1alpha1');
    assert.deepEqual(back.spec, alpha.spec);

    const stored = (await env.etcdValue('/registry/app.example.com/appservices/hooks/old')) as { apiVersion: string };
    assert.equal(stored.apiVersion, 'app.example.com/v1', 'etcd holds the v1 form');
  });

  test('kubectl get appservices.v1alpha1.app.example.com still answers, and the controller reconciles', async () => {
    const list = await kubectl(['get', 'appservices.v1alpha1.app.example.com', '-n', 'hooks']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^old\s+3\s/m);
    await op?.eventually(
      'status.replicas 3 on the v1alpha1-created AppService',
      async () =>
        (
          await kubectl([
            'get',
            'appservices.v1.app.example.com',
            'old',
            '-n',
            'hooks',
            '-o',
            'jsonpath={.status.replicas}',
          ])
        ).stdout === '3',
      { timeoutMs: 60_000, intervalMs: 250 },
    );
  });
});

describe('served by the operator process', () => {
  let c: Cluster;
  let hooks: InstalledWebhooks;
  let proc: OperatorProcess | undefined;
  let admin: Client | undefined;
  before(async () => {
    admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'webhook-e2e' });
    await installApiAndRbac(admin, { webhooks: 'none' });
    const configurations = (await installObjects()).filter((o) => o.kind?.endsWith('WebhookConfiguration'));
    assert.equal(configurations.length, 2, 'dist/install.yaml has the mutating and validating configurations');
    hooks = await env.installWebhooks({ configurations, conversions: ['appservices.app.example.com'] });
    const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    c = { env, admin, operatorKubeconfig: sa.path };
    proc = operator(c, ['--webhook-bind-address', `127.0.0.1:${hooks.port}`, '--webhook-cert-dir', hooks.certDir], {
      ENABLE_WEBHOOKS: 'true',
    });
    // ready once the webhooks answer: a dry-run create goes through the mutating and validating webhooks
    await waitFor(
      'the operator serving webhooks',
      async () =>
        (
          await apply({
            apiVersion: 'app.example.com/v1',
            kind: 'AppService',
            metadata: { name: 'probe', namespace: 'hooks' },
            spec: { template: { image: 'busybox:1.36' } },
          })
        ).code === 0,
      60_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\noperator log: ${proc?.log.slice(-2_000)}`);
    });
  });
  after(async () => {
    await proc?.stop();
    await hooks?.uninstall();
    admin?.close();
  });

  test('webhook down under failurePolicy Fail: writes are refused with a clear message, nothing is lost, it recovers', async () => {
    const before = (await kubectl(['get', 'appservices.v1.app.example.com', '-n', 'hooks', '-o', 'json'])).stdout;
    await proc?.stop('SIGKILL');
    const refused = await apply({
      apiVersion: 'app.example.com/v1',
      kind: 'AppService',
      metadata: { name: 'while-down', namespace: 'hooks' },
      spec: { template: { image: 'nginx:1.27' } },
    });
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /failed calling webhook "mappservice-v1\.app\.example\.com"/);
    assert.match(refused.stderr, /connection refused/);
    // what is stored is untouched, and the storage version still reads without the webhook
    assert.equal(
      (await kubectl(['get', 'appservices.v1.app.example.com', '-n', 'hooks', '-o', 'json'])).stdout,
      before,
    );

    proc = operator(c, ['--webhook-bind-address', `127.0.0.1:${hooks.port}`, '--webhook-cert-dir', hooks.certDir], {
      ENABLE_WEBHOOKS: 'true',
    });
    await waitFor(
      'the restarted operator to serve webhooks',
      async () =>
        (
          await apply({
            apiVersion: 'app.example.com/v1',
            kind: 'AppService',
            metadata: { name: 'while-down', namespace: 'hooks' },
            spec: { template: { image: 'nginx:1.27' } },
          })
        ).code === 0,
      60_000,
      250,
    );
    const old = await kubectl([
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
});
