/**
 * README's example (examples/website.ts) on a real control plane: in-process under the RBAC of its `permissions`
 * (a permission it lacks fails with the 403 named), and as the operator process its `main` starts, stopped by
 * SIGTERM. A Website gets a Deployment it controls, and its status follows the Deployment's ready pods.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Applier, Client, loadConfig } from '@opkit/runtime/client';
import { controllerOf } from '@opkit/runtime/helpers';
import { Deployments } from '@opkit/runtime/kinds';
import { eventually, startTestManager } from '@opkit/runtime/testing';
import { type Environment, start } from '@opkit/testenv';
import { permissions, setup, Websites } from './website.ts';

const EXAMPLE = join(dirname(fileURLToPath(import.meta.url)), 'website.ts');

let env: Environment;
before(async () => {
  env = await start({ nodes: 1, log: () => {} });
});
after(async () => {
  await env?.stop();
});

test('in-process, as its ServiceAccount: a Website gets its Deployment, and the ready pods in its status', async () => {
  const op = await startTestManager(env, {
    name: 'website-operator',
    kinds: [Websites],
    permissions,
    setup,
  });
  try {
    const ref = { namespace: 'default', name: 'shop' };
    const site = await op.client.create(Websites, { metadata: ref, spec: { image: 'nginx:1.29' } });
    const deployment = await op.eventually('the Deployment', () => op.client.getIfExists(Deployments, ref));
    assert.equal(controllerOf(deployment)?.uid, site.metadata.uid, 'the Website controls its Deployment');
    assert.equal(deployment.spec?.replicas, 1, 'the CRD default reached the reconcile');
    assert.equal(deployment.spec?.template.spec?.containers[0]?.image, 'nginx:1.29');

    await op.client.patch(Websites, ref, { spec: { replicas: 3 } });
    await op.eventually(
      'status.readyReplicas 3',
      async () => (await op.client.get(Websites, ref)).status?.readyReplicas === 3,
    );
  } finally {
    await op.stop();
  }
});

test('as the operator process its main starts: converges, and exits 0 on SIGTERM', async () => {
  const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'website-test' });
  try {
    await new Applier(admin, 'website-test').applyAll([Websites.crd()]);
    await eventually('the Website CRD to be served', async () => !!(await admin.list(Websites, { pageSize: 1 })));

    const child = spawn(
      process.execPath,
      [EXAMPLE, '--kubeconfig', env.kubeconfigPath, '--metrics-bind-address', '0', '--health-probe-bind-address', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    for (const stream of [child.stdout, child.stderr]) stream.on('data', (chunk: Buffer) => (output += chunk));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const ref = { namespace: 'default', name: 'blog' };
      await admin.create(Websites, { metadata: ref, spec: { image: 'nginx:1.29', replicas: 2 } });
      await eventually(
        'status.readyReplicas 2',
        async () => {
          assert.equal(child.exitCode, null, `the operator exited:\n${output}`);
          return (await admin.get(Websites, ref)).status?.readyReplicas === 2;
        },
        { timeoutMs: 60_000 },
      );
      assert.equal((await admin.get(Deployments, ref)).spec?.replicas, 2);
    } finally {
      child.kill('SIGTERM');
    }
    const [code, signal] = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, `after SIGTERM:\n${output}`);
  } finally {
    admin.close();
  }
});
