// The chaos fault of the interrupted restore: the operator runs as its own process (its ServiceAccount) and is
// killed with SIGKILL at a random point, several times, while three stores restore from one snapshot — each store
// created at the start of every other round, so the kills land before, during and after its Job. Then a last
// operator finishes, and every store must have been restored exactly once (one Job, one pod of it, its uid in the
// status), with no pod before its restore succeeded. Seeded: KV_CHAOS_SEED=n replays a run.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Client, loadConfig } from '@opkit/runtime/client';
import { type Environment, start } from '@opkit/testenv';
import { seeded } from '@opkit/testenv/chaos';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { checkRestoredOnce, observeGate, prepareSnapshot } from './restore-support.ts';
import { namespace, startOperator, storeReady } from './support.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const SEED = Number(process.env.KV_CHAOS_SEED ?? 28);
const ROUNDS = 7;
const STORES = 3;

let env: Environment;
before(async () => {
  env = await start({ nodes: 2, log: () => {} });
});
after(async () => {
  await env?.stop();
});

/** Runs the operator process for `ms`, then SIGKILLs it. */
async function runThenKill(kubeconfig: string, ms: number): Promise<void> {
  const args = [MAIN, '--kubeconfig', kubeconfig, '--metrics-bind-address', '0', '--health-probe-bind-address', '0'];
  const proc = spawn(process.execPath, args, { stdio: 'ignore' });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  await new Promise((r) => setTimeout(r, ms));
  proc.kill('SIGKILL');
  await exited;
}

test(`a restore killed at random points completes exactly once (seed ${SEED})`, { timeout: 300_000 }, async (t) => {
  const random = seeded(SEED); // the same seed, the same kill times
  const setup = await startOperator(env); // installs the CRDs and the operator's RBAC, and prepares the snapshot
  let ns = '';
  try {
    ns = await namespace(setup.op, 'chaos');
    await prepareSnapshot(setup.op, ns);
  } finally {
    await setup.op.stop();
  }
  const kubeconfig = (await env.kubeconfigFor({ namespace: 'default', name: 'kvstore-operator' })).path;
  const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'chaos-test' });
  const names = Array.from({ length: STORES }, (_, i) => `copy-${i}`);
  const gates = names.map((name) => observeGate(admin, ns, name));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const name = round % 2 === 0 ? names[round / 2] : undefined; // stores start in rounds 0, 2, 4
      if (name !== undefined)
        await admin.create(KVStores, { metadata: { namespace: ns, name }, spec: { replicas: 2, restoreFrom: 'snap' } });
      const ms = 300 + Math.floor(random() * 2_700);
      await runThenKill(kubeconfig, ms);
      const phases = await Promise.all(
        names.map(
          async (n) => (await admin.getIfExists(KVStores, { namespace: ns, name: n }))?.status?.restore?.phase ?? '-',
        ),
      );
      t.diagnostic(`round ${round}: killed after ${ms} ms; restores: ${phases.join(', ')}`);
    }
    const last = await startOperator(env);
    try {
      for (const name of names) {
        const store = await storeReady(last.op, ns, name);
        assert.equal(store.status?.restore?.phase, 'Succeeded', name);
        await checkRestoredOnce(admin, ns, name);
      }
    } finally {
      await last.op.stop();
    }
  } finally {
    for (const g of gates) await g.stop();
    admin.close();
  }
});
