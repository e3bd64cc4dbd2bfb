import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const START = fileURLToPath(new URL('../../../scripts/start.ts', import.meta.url));

test('npm start with no reachable cluster: starts a local control plane, runs the operator, the sample converges', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-start-'));
  const r = spawnSync(process.execPath, [START, '--exit-when-ready'], {
    encoding: 'utf8',
    env: { ...process.env, KUBECONFIG: join(dir, 'no-such-kubeconfig') },
    timeout: 180_000,
  });
  await rm(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /starting a local control plane/);
  assert.match(r.stdout, /runs as system:serviceaccount:appservice-system:appservice-operator/);
  assert.match(r.stdout, /default\/example-appservice\s+3\s+3\s+3\s+busybox/);
  assert.match(r.stdout, /the sample has converged/);
  assert.match(r.stdout, /stopping the local control plane/);
});
