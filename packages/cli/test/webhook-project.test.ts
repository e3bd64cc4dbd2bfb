/**
 * A project with webhooks, made as a user makes one, outside the repository (opkit init → create api → create
 * webhook, its packages linked as npm would install them), against a local control plane without cert-manager:
 * `opkit deploy` and `opkit deploy --helm` check the cluster before they write, a write that fails part-way says what
 * was applied, two `opkit run`s of the project never take each other's webhooks away, and `opkit chaos` runs it with
 * its webhooks served by the replicas.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isApiError, type KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig, parseManifests, resource } from '@opkit/runtime/client';
import { CustomResourceDefinitions } from '@opkit/runtime/kinds';
import { auditLogSize, type Environment, readAuditLog, resolveHelm, start, WRITE_VERBS, waitFor } from '@opkit/testenv';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));

function opkit(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 240_000,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const address = s.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

const configurationType = (kind: string) =>
  resource({
    group: 'admissionregistration.k8s.io',
    version: 'v1',
    kind,
    plural: `${kind.toLowerCase()}s`,
    namespaced: false,
  });

let work: string;
let dir: string;
let env: Environment;
let admin: Client;

/** Every object of the project's install, as `opkit deploy` would write it. */
async function installObjects(): Promise<KubeObject[]> {
  return parseManifests(await readFile(join(dir, 'dist/install.yaml'), 'utf8'));
}

/** The objects of `objects` that exist in the cluster, as `Kind namespace/name`. */
async function present(objects: readonly KubeObject[]): Promise<string[]> {
  const applier = new Applier(admin, 'test');
  const found: string[] = [];
  for (const o of objects) {
    const r = await applier.resourceFor(o.apiVersion ?? '', o.kind ?? '').catch(() => undefined);
    if (!r) continue; // a kind the cluster does not serve: certainly absent
    const ref = r.namespaced
      ? { namespace: o.metadata.namespace ?? 'default', name: o.metadata.name ?? '' }
      : { name: o.metadata.name ?? '' };
    try {
      await admin.get(r, ref);
      found.push(`${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`);
    } catch (err) {
      if (!isApiError(err, 'NotFound')) throw err;
    }
  }
  return found;
}

/** The writes the opkit command made (user agent `opkit/<version> (opkit)`) since `from`. */
async function cliWrites(from: number): Promise<string[]> {
  const { events } = await readAuditLog(env.auditLogPath ?? '', { from });
  return events
    .filter((e) => WRITE_VERBS.has(e.verb) && e.userAgent?.endsWith('(opkit)'))
    .map((e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name ?? ''}`);
}

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-webhook-project-'));
  const init = opkit(work, ['init', 'gadget-operator', '--domain', 'example.org']);
  assert.equal(init.code, 0, init.out);
  dir = join(work, 'gadget-operator');
  const link = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
  assert.equal(link.status, 0, link.stderr);
  const api = opkit(dir, ['create', 'api', '--group', 'toys', '--version', 'v1', '--kind', 'Gadget', '--controller']);
  assert.equal(api.code, 0, api.out);
  const hooks = opkit(dir, [
    'create',
    'webhook',
    '--group',
    'toys',
    '--version',
    'v1',
    '--kind',
    'Gadget',
    '--defaulting',
    '--validation',
  ]);
  assert.equal(hooks.code, 0, hooks.out);
  env = await start({ nodes: 1, auditLog: true, log: () => {} });
  admin = new Client(await loadConfig({ path: env.kubeconfigPath }));
});

after(async () => {
  admin?.close();
  await env?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

describe('opkit deploy of a project with webhooks, on a cluster without cert-manager', () => {
  test('fails before the first write, naming the Issuer and Certificate kinds, their file and what to install', async (t) => {
    const objects = await installObjects();
    assert.deepEqual(await present(objects), [], 'nothing of the project is in the cluster yet');
    const from = await auditLogSize(env.auditLogPath ?? '');
    const r = opkit(dir, ['deploy', '--kubeconfig', env.kubeconfigPath]);
    t.diagnostic(r.out.trim());
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /nothing was applied/);
    assert.match(r.out, /kind Issuer in cert-manager\.io\/v1 \(config\/certmanager\/certificate\.yaml\)/);
    assert.match(r.out, /kind Certificate in cert-manager\.io\/v1 \(config\/certmanager\/certificate\.yaml\)/);
    assert.match(r.out, /install cert-manager/);
    assert.match(r.out, /--set certManager\.enabled=false --set webhook\.certificates=selfManaged/);
    assert.deepEqual(await present(objects), [], 'the cluster has none of the project’s objects');
    assert.deepEqual(await cliWrites(from), [], 'opkit wrote nothing');
  });

  test('--helm checks what the chart renders, before it applies the CRDs and before helm runs', {
    timeout: 600_000,
  }, async (t) => {
    const helm = await resolveHelm({ log: () => {} });
    const objects = await installObjects();
    const from = await auditLogSize(env.auditLogPath ?? '');
    const r = opkit(dir, ['deploy', '--helm', '--kubeconfig', env.kubeconfigPath], { OPKIT_HELM: helm });
    t.diagnostic(r.out.trim());
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /nothing was applied/);
    assert.match(r.out, /kind Issuer in cert-manager\.io\/v1 \(dist\/chart\/templates\/certmanager\.yaml\)/);
    assert.match(r.out, /kind Certificate in cert-manager\.io\/v1 \(dist\/chart\/templates\/certmanager\.yaml\)/);
    assert.match(r.out, /install cert-manager/);
    assert.deepEqual(await present(objects), [], 'the cluster has none of the project’s objects');
    assert.deepEqual(await cliWrites(from), [], 'opkit wrote nothing');

    // the values given after -- are the ones checked: without cert-manager's kinds the release goes in
    const selfManaged = ['--', '--set', 'certManager.enabled=false', '--set', 'webhook.certificates=selfManaged'];
    const ok = opkit(dir, ['deploy', '--helm', '--kubeconfig', env.kubeconfigPath, ...selfManaged], {
      OPKIT_HELM: helm,
    });
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /deployed gadget-operator/);
    const removed = opkit(dir, ['undeploy', '--helm', '--kubeconfig', env.kubeconfigPath], { OPKIT_HELM: helm });
    assert.equal(removed.code, 0, removed.out);
  });

  test('a write that fails part-way (Forbidden) names exactly what was applied and what was not', async (t) => {
    // cert-manager's kinds served by stand-in CRDs, so the check passes; a deployer allowed Namespaces and CRDs only
    const standIns = parseManifests(
      ['Issuer', 'Certificate']
        .map(
          (kind) => `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: ${kind.toLowerCase()}s.cert-manager.io }
spec:
  group: cert-manager.io
  scope: Namespaced
  names: { kind: ${kind}, plural: ${kind.toLowerCase()}s, singular: ${kind.toLowerCase()}, listKind: ${kind}List }
  versions:
    - name: v1
      served: true
      storage: true
      schema: { openAPIV3Schema: { type: object, x-kubernetes-preserve-unknown-fields: true } }
`,
        )
        .join('---\n'),
    );
    const rbac = parseManifests(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: { name: partial-deployer }
rules:
  - { apiGroups: [''], resources: [namespaces], verbs: [get, create, patch] }
  - { apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], verbs: [get, create, patch] }
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: { name: partial-deployer }
roleRef: { apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: partial-deployer }
subjects: [{ kind: ServiceAccount, name: partial-deployer, namespace: default }]
`);
    const applier = new Applier(admin, 'test');
    await applier.applyAll([...standIns, ...rbac]);
    const deployer = await env.kubeconfigFor({ namespace: 'default', name: 'partial-deployer' });
    try {
      const r = opkit(dir, ['deploy', '--kubeconfig', deployer.path]);
      t.diagnostic(r.out.trim());
      assert.equal(r.code, 1, r.out);
      assert.match(r.out, /applying ServiceAccount gadget-operator-system\/gadget-operator failed: .*forbidden/i);
      assert.match(
        r.out,
        /applied before it, and still in the cluster: Namespace gadget-operator-system, CustomResourceDefinition gadgets\.toys\.example\.org;/,
      );
      assert.match(r.out, /not applied: it and the \d+ after it \(ClusterRole gadget-operator, /);
      assert.deepEqual(await present(await installObjects()), [
        'Namespace gadget-operator-system',
        'CustomResourceDefinition gadgets.toys.example.org',
      ]);
    } finally {
      assert.equal(opkit(dir, ['undeploy', '--kubeconfig', env.kubeconfigPath]).code, 0);
      await applier.deleteAll([...standIns, ...rbac]);
    }
  });
});

describe('two opkit runs of the same project', () => {
  test('the second fails before it writes; the first keeps its webhooks and removes only its own when it ends', {
    timeout: 300_000,
  }, async (t) => {
    const ports = ['--metrics-bind-address', `127.0.0.1:${await freePort()}`];
    ports.push('--health-probe-bind-address', `127.0.0.1:${await freePort()}`);
    const first: ChildProcess = spawn(
      process.execPath,
      [MAIN, 'run', '--kubeconfig', env.kubeconfigPath, '--', ...ports],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    first.stdout?.setEncoding('utf8').on('data', (c: string) => {
      log += c;
    });
    first.stderr?.setEncoding('utf8').on('data', (c: string) => {
      log += c;
    });
    const exited = new Promise<number | null>((resolve) => first.once('exit', (code) => resolve(code)));
    const longName = 'g'.repeat(64);
    const gadget = (name: string) =>
      JSON.stringify({
        apiVersion: 'toys.example.org/v1',
        kind: 'Gadget',
        metadata: { name, namespace: 'default' },
        spec: {},
      });
    const kubectl = (args: string[], input?: string) => {
      const r = spawnSync(env.binaries.kubectl ?? 'kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], {
        encoding: 'utf8',
        ...(input !== undefined ? { input } : {}),
      });
      return { code: r.status, out: r.stdout + r.stderr };
    };
    /** The validator of the first run answers: a Gadget with a 64-character name (the apiserver allows 253) is refused. */
    let lastAnswer = '';
    const refusesLongNames = () => {
      const r = kubectl(['create', '--dry-run=server', '-f', '-'], gadget(longName));
      lastAnswer = r.out;
      return r.code !== 0 && /is invalid: metadata\.name: Too long: may not be more than 63 bytes/.test(r.out);
    };
    const snapshot = async () => {
      const out: string[] = [];
      for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
        const c = (await admin
          .get(configurationType(kind), {
            name: `gadget-operator-${kind.startsWith('M') ? 'mutating' : 'validating'}-webhook-configuration`,
          })
          .catch(() => undefined)) as (KubeObject & { webhooks?: { clientConfig?: { url?: string } }[] }) | undefined;
        out.push(
          c
            ? `${kind} ${c.metadata.name} ${c.metadata.uid} rv=${c.metadata.resourceVersion} ${c.webhooks?.[0]?.clientConfig?.url}`
            : `${kind} absent`,
        );
      }
      return out;
    };
    try {
      await waitFor('the first run to serve its validator', async () => refusesLongNames(), 120_000, 500).catch(
        (err: Error) => {
          throw new Error(`${err.message}; kubectl: ${lastAnswer}\n${log.slice(-3_000)}`);
        },
      );
      // spawnSync held the event loop: let the first run's output arrive
      await waitFor('the first run to say where it serves', async () => /served at https/.test(log), 10_000, 50);
      const url = /served at (https:\/\/127\.0\.0\.1:\d+)/.exec(log)?.[1];
      assert.ok(url, log);
      const before = await snapshot();
      assert.ok(
        before.every((line) => line.includes(url)),
        `both configurations point at the first run: ${before.join('; ')}`,
      );

      // the same command again: its ports are the first run's (reserved by it, and bound by its operator)
      let from = await auditLogSize(env.auditLogPath ?? '');
      const again = opkit(dir, ['run', '--kubeconfig', env.kubeconfigPath, '--', ...ports]);
      t.diagnostic(again.out.trim());
      assert.equal(again.code, 1, again.out);
      assert.match(
        again.out,
        new RegExp(
          `port \\d+ \\(--metrics-bind-address [^)]*\\) is reserved by another opkit run on this machine \\(pid ${first.pid}, `,
        ),
      );
      assert.match(again.out, /nothing was written to the cluster/);
      assert.deepEqual(await cliWrites(from), [], 'the second run wrote nothing');
      assert.deepEqual(await snapshot(), before, 'the first run’s configurations are intact');
      assert.ok(refusesLongNames(), 'the first run’s validator still answers');

      // other ports: the configurations belong to the first run, which is alive
      from = await auditLogSize(env.auditLogPath ?? '');
      const other = opkit(dir, [
        'run',
        '--kubeconfig',
        env.kubeconfigPath,
        '--',
        '--metrics-bind-address',
        '0',
        '--health-probe-bind-address',
        '0',
      ]);
      t.diagnostic(other.out.trim());
      assert.equal(other.code, 1, other.out);
      assert.match(
        other.out,
        new RegExp(`belongs? to another opkit run \\(pid ${first.pid} on this machine`),
        'names the other run',
      );
      assert.match(other.out, /stop that run first/);
      assert.deepEqual(await cliWrites(from), [], 'the second run wrote nothing');
      assert.deepEqual(await snapshot(), before, 'the first run’s configurations are intact');
      assert.ok(refusesLongNames(), 'the first run’s validator still answers');

      // a configuration the first run no longer owns (another run's now) is left when it ends
      await admin.patch(
        configurationType('MutatingWebhookConfiguration'),
        { name: 'gadget-operator-mutating-webhook-configuration' },
        { metadata: { annotations: { 'opkit.dev/run-id': 'another-run' } } },
      );
    } finally {
      first.kill('SIGINT');
    }
    assert.equal(await exited, 130, log);
    assert.match(log, /removed the 1 webhook configuration\(s\) of this run/);
    assert.match(log, /left MutatingWebhookConfiguration gadget-operator-mutating-webhook-configuration/);
    const after = await snapshot();
    assert.match(after[0] ?? '', /^MutatingWebhookConfiguration gadget-operator-mutating-webhook-configuration /);
    assert.equal(after[1], 'ValidatingWebhookConfiguration absent', 'the first run removed its own configuration');
    const crd = await admin.get(CustomResourceDefinitions, { name: 'gadgets.toys.example.org' });
    assert.equal(crd.metadata.annotations?.['opkit.dev/run-id'], undefined);
  });
});

describe('opkit chaos of a project with webhooks', () => {
  test('its replicas serve the webhooks behind the loopback Service; with the Service down a while, nothing breaks', {
    timeout: 300_000,
  }, () => {
    // the chaos run starts a control plane of its own; the webhooks (failurePolicy: Fail) admit every Gadget it writes
    const r = opkit(dir, ['chaos', '--faults', 'webhook-down,crash', '--trials', '4', '--no-generated', '--seed', '3']);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /fault-free samples:fault-free ✓/);
    assert.match(r.out, /trial samples:\d+:webhook-down ✓/);
    assert.match(r.out, /✓ no violation: 1 fault-free run and \d of \d trials/);
  });
});
