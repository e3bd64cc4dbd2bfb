// The KVSnapshot controller end to end on testenv: a snapshot that succeeds (its data stored in a ConfigMap, removed
// by the finalizer when the KVSnapshot is deleted), one whose Job fails (shown Failed, with the Job's reason), and
// one created before its store (Pending, then taken once the store is Ready: a KVStore change reconciles it).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { isNotFound } from '@opkit/runtime';
import { ConfigMaps, Jobs, Pods } from '@opkit/runtime/kinds';
import { type Environment, EXIT_CODE_ANNOTATION, start } from '@opkit/testenv';
import { KVSnapshots } from '../src/api/v1alpha1/kvsnapshot.ts';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { SNAPSHOT_FINALIZER } from '../src/controllers/kvsnapshot.ts';
import { namespace, snapshotPhase, startOperator, storeReady } from './support.ts';

let env: Environment;
before(async () => {
  env = await start({ nodes: 2, log: () => {} });
});
after(async () => {
  await env?.stop();
});

const gone = async (get: () => Promise<unknown>) => {
  try {
    await get();
    return false;
  } catch (err) {
    if (isNotFound(err)) return true;
    throw err;
  }
};

test('a snapshot succeeds, stores its data, and its finalizer removes the data with it', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'snap-ok');
    await op.client.create(KVStores, { metadata: { namespace: ns, name: 'db' }, spec: { replicas: 1 } });
    await storeReady(op, ns, 'db');
    await op.client.create(KVSnapshots, { metadata: { namespace: ns, name: 'nightly' }, spec: { storeName: 'db' } });
    const snap = await snapshotPhase(op, ns, 'nightly', 'Succeeded');
    assert.deepEqual([snap.status?.dataRef, snap.status?.storeVersion], ['nightly-data', '1.36']);
    assert.ok(snap.metadata.finalizers?.includes(SNAPSHOT_FINALIZER));
    const data = await op.client.get(ConfigMaps, { namespace: ns, name: 'nightly-data' });
    assert.equal(data.data?.store, 'db');
    assert.equal(data.metadata.ownerReferences, undefined, 'not garbage-collected: only the finalizer removes it');

    await op.client.delete(KVSnapshots, { namespace: ns, name: 'nightly' });
    await op.eventually('the KVSnapshot and its data gone', async () => {
      const snapGone = await gone(() => op.client.get(KVSnapshots, { namespace: ns, name: 'nightly' }));
      const dataGone = await gone(() => op.client.get(ConfigMaps, { namespace: ns, name: 'nightly-data' }));
      return snapGone && dataGone;
    });
  } finally {
    await op.stop();
  }
});

test('a snapshot whose Job fails is shown Failed, with the reason, and is not retried', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'snap-fail');
    await op.client.create(KVStores, { metadata: { namespace: ns, name: 'db' }, spec: { replicas: 1 } });
    await storeReady(op, ns, 'db');
    await op.client.create(KVSnapshots, {
      metadata: { namespace: ns, name: 'broken', annotations: { 'kv.example.com/test-exit-code': '1' } },
      spec: { storeName: 'db' },
    });
    const snap = await snapshotPhase(op, ns, 'broken', 'Failed');
    assert.match(snap.status?.message ?? '', /BackoffLimitExceeded/);
    const job = await op.client.get(Jobs, { namespace: ns, name: 'broken-snapshot' });
    assert.equal(job.status?.failed, 1);
    const pods = (await op.client.list(Pods, { namespace: ns, labelSelector: 'job-name=broken-snapshot' })).items;
    assert.equal(pods.length, 1, 'backoffLimit 0: one pod, no retry');
    assert.equal(pods[0]?.metadata.annotations?.[EXIT_CODE_ANNOTATION], '1', "the hook became testenv's annotation");
    assert.equal(pods[0]?.status?.phase, 'Failed');
    assert.equal(pods[0]?.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 1);
    assert.equal(await gone(() => op.client.get(ConfigMaps, { namespace: ns, name: 'broken-data' })), true, 'no data');
  } finally {
    await op.stop();
  }
});

test('a snapshot of a store that is not there yet waits, and is taken once the store is Ready', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'snap-wait');
    await op.client.create(KVSnapshots, { metadata: { namespace: ns, name: 'early' }, spec: { storeName: 'later' } });
    const pending = await snapshotPhase(op, ns, 'early', 'Pending');
    assert.match(pending.status?.message ?? '', /KVStore later not found/);
    await op.client.create(KVStores, { metadata: { namespace: ns, name: 'later' }, spec: { replicas: 1 } });
    await snapshotPhase(op, ns, 'early', 'Succeeded');
  } finally {
    await op.stop();
  }
});
