/**
 * `probeCurrentCluster` against a real apiserver: the current kubeconfig's cluster answers with its credentials, and
 * an unreachable server or an unusable kubeconfig is an answer with a reason, never a rejection.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Environment, start } from '@opkit/testenv';
import { probeCurrentCluster } from '../src/index.ts';

let env: Environment;
let dir: string;
const saved = process.env.KUBECONFIG;
before(async () => {
  env = await start({ nodes: 0 });
  dir = await mkdtemp(join(tmpdir(), 'opkit-probe-'));
});
after(async () => {
  if (saved === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = saved;
  await env?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('the current kubeconfig’s cluster answers with its credentials', async () => {
  process.env.KUBECONFIG = env.kubeconfigPath;
  const probe = await probeCurrentCluster();
  assert.ok(probe.reachable, probe.reachable ? '' : probe.reason);
  assert.equal(probe.server, env.server);
});

test('an unreachable server and an unusable kubeconfig are answers with a reason', async () => {
  const path = join(dir, 'closed.yaml');
  await writeFile(
    path,
    `apiVersion: v1
kind: Config
current-context: c
clusters: [{ name: c, cluster: { server: "https://127.0.0.1:1" } }]
users: [{ name: u, user: { token: t } }]
contexts: [{ name: c, context: { cluster: c, user: u } }]
`,
  );
  process.env.KUBECONFIG = path;
  const closed = await probeCurrentCluster(2_000);
  assert.equal(closed.reachable, false);
  assert.match(closed.reachable ? '' : closed.reason, /https:\/\/127\.0\.0\.1:1 \(context c\)/);

  const broken = join(dir, 'broken.yaml');
  await writeFile(broken, 'apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n');
  process.env.KUBECONFIG = broken;
  const unusable = await probeCurrentCluster();
  assert.equal(unusable.reachable, false);
  assert.match(unusable.reachable ? '' : unusable.reason, /the kubeconfig cannot be used: .*nowhere/);
});
