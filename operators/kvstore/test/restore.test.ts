// Restore end to end on testenv: a KVStore created with spec.restoreFrom is restored by exactly one Job before any
// of its pods exist; a restore interrupted by an operator stop (the manager stopped mid-restore, a new one started)
// completes exactly once.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Environment, start } from '@opkit/testenv';
import { KVSnapshots } from '../src/api/v1alpha1/kvsnapshot.ts';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { checkRestoredOnce, observeGate, prepareSnapshot } from './restore-support.ts';
import { namespace, startOperator, storeReady } from './support.ts';

let env: Environment;
before(async () => {
  env = await start({ nodes: 2, log: () => {} });
});
after(async () => {
  await env?.stop();
});

test('a store restored from a snapshot: one Job, no pod before it succeeded', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'restore');
    await prepareSnapshot(op, ns);
    const gate = observeGate(op.client, ns, 'copy');
    await op.client.create(KVStores, {
      metadata: { namespace: ns, name: 'copy' },
      spec: { replicas: 2, restoreFrom: 'snap' },
    });
    const copy = await storeReady(op, ns, 'copy');
    await gate.stop();
    assert.equal(copy.status?.restore?.phase, 'Succeeded');
    assert.equal(copy.status?.readyReplicas, 2);
    await checkRestoredOnce(op.client, ns, 'copy');
  } finally {
    await op.stop();
  }
});

test('the manager stopped mid-restore: a new one completes the restore, exactly once', async () => {
  const first = await startOperator(env);
  const ns = await namespace(first.op, 'restart');
  let second: Awaited<ReturnType<typeof startOperator>> | undefined;
  try {
    await prepareSnapshot(first.op, ns);
    const gate = observeGate(first.op.client, ns, 'copy');
    await first.op.client.create(KVStores, {
      metadata: { namespace: ns, name: 'copy' },
      spec: { replicas: 2, restoreFrom: 'snap' },
    });
    // stop as soon as the restore Job is recorded: the Job may still run or have ended, the status not yet updated
    const mid = await first.op.eventually(
      'the restore to be Running',
      async () => {
        const s = await first.op.client.get(KVStores, { namespace: ns, name: 'copy' });
        return s.status?.restore?.phase === 'Running' && s.status.restore.jobUID !== undefined && s;
      },
      { intervalMs: 10 },
    );
    await first.op.stop();

    second = await startOperator(env);
    const copy = await storeReady(second.op, ns, 'copy');
    await gate.stop();
    assert.equal(copy.status?.restore?.phase, 'Succeeded');
    assert.equal(copy.status?.restore?.jobUID, mid.status?.restore?.jobUID, 'the same Job, recorded before the stop');
    await checkRestoredOnce(second.op.client, ns, 'copy');
    assert.ok(await second.op.client.get(KVSnapshots, { namespace: ns, name: 'snap' }));
  } finally {
    await second?.op.stop();
  }
});
