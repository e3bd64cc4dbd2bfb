import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Store } from '../cache/store.ts';
import type { KubeObject } from '../client/resource.ts';
import { silentLogger } from '../logger.ts';
import { Expectations } from './expectations.ts';

const pod = (name: string, uid: string, rv = '1'): KubeObject => ({
  metadata: { namespace: 'ns', name, uid, resourceVersion: rv },
});

test('a created child is expected until the store holds its UID; a deleted one until its UID is gone', () => {
  const now = 0;
  const store = new Store<KubeObject>();
  const e = new Expectations({ now: () => now, log: silentLogger });
  e.expectCreated('ns/owner', store, pod('a', 'u1'));
  e.expectCreated('ns/owner', store, pod('b', 'u2'));
  assert.equal(e.satisfied('ns/owner'), false);
  store.upsert(pod('a', 'u1'));
  assert.equal(e.satisfied('ns/owner'), false);
  assert.equal(e.pending('ns/owner'), 1);
  store.upsert(pod('b', 'u2'));
  assert.equal(e.satisfied('ns/owner'), true);

  e.expectDeleted('ns/owner', store, pod('a', 'u1'));
  assert.equal(e.satisfied('ns/owner'), false);
  store.remove(pod('a', 'u1'));
  assert.equal(e.satisfied('ns/owner'), true);
  assert.equal(e.satisfied('ns/other'), true, 'nothing expected');
});

test('an observation made before the expectation was recorded counts (no lost race)', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ log: silentLogger });
  store.upsert(pod('fast', 'u9'));
  e.expectCreated('ns/owner', store, pod('fast', 'u9'));
  assert.equal(e.satisfied('ns/owner'), true);
});

test('expectations time out so a lost event cannot wedge the controller', () => {
  let now = 0;
  const store = new Store<KubeObject>();
  const e = new Expectations({ timeoutMs: 1_000, now: () => now, log: silentLogger });
  e.expectCreated('ns/owner', store, pod('never', 'u3'));
  now = 400;
  assert.equal(e.remainingMs('ns/owner'), 600);
  assert.equal(e.satisfied('ns/owner'), false);
  now = 1_001;
  assert.equal(e.satisfied('ns/owner'), true);
  assert.throws(() => e.expectCreated('k', store, { metadata: { name: 'x' } }), /metadata.uid/);
});

test('a delete is observed as soon as the child is terminating (deletionTimestamp), not when it leaves the cache', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ now: () => 0, log: silentLogger });
  const p = pod('graceful', 'u1');
  store.upsert(p);
  e.expectDeleted('ns/owner', store, p);
  assert.equal(e.satisfied('ns/owner'), false, 'still running');
  // the apiserver sets deletionTimestamp and keeps the pod for its 30 s grace period
  store.upsert({ metadata: { ...p.metadata, resourceVersion: '2', deletionTimestamp: '2026-11-30T00:00:00Z' } });
  assert.equal(e.satisfied('ns/owner'), true, 'terminating counts as deleted');
});

test('a create that the cache saw and that was deleted again before the next check is observed (no 60 s wait)', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ now: () => 0, log: silentLogger });
  const created = pod('short-lived', 'u7');
  e.expectCreated('ns/owner', store, created);
  // the ADDED and DELETED events passed through the cache between two checks
  e.observe(created, false);
  e.observe(created, true);
  assert.equal(store.get('ns/short-lived'), undefined);
  assert.equal(e.satisfied('ns/owner'), true);
});

test('a delete event observed by UID lowers the expectation even if a new object took the name', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ now: () => 0, log: silentLogger });
  const old = pod('p', 'u1');
  store.upsert(old);
  e.expectDeleted('ns/owner', store, old);
  e.observe({ metadata: { ...old.metadata, resourceVersion: '5' } }, false);
  assert.equal(e.satisfied('ns/owner'), false, 'an update without deletionTimestamp is not a delete');
  e.observe(old, true);
  assert.equal(e.satisfied('ns/owner'), true);
  e.observe(old, true); // an event for a UID nobody expects is ignored
  assert.equal(e.pending('ns/owner'), 0);
});

/** A `LiveSource` whose apiserver holds `live` (or fails with `fail`), listed in the namespace asked. */
function liveSource(store: Store<KubeObject>, live: KubeObject[], fail?: { error: Error | undefined }) {
  const asked: (string | undefined)[] = [];
  return {
    asked,
    source: {
      store,
      async listLive(namespace: string | undefined) {
        asked.push(namespace);
        if (fail?.error) throw fail.error;
        return live.filter((o) => namespace === undefined || o.metadata.namespace === namespace);
      },
    },
  };
}

const controlledBy = (uid: string) => [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid, controller: true }];
const child = (name: string, uid: string, ownerUid: string): KubeObject => ({
  metadata: { namespace: 'ns', name, uid, ownerReferences: controlledBy(ownerUid) },
});
const sentFor = (ownerUid: string): KubeObject => ({
  metadata: { namespace: 'ns', generateName: 'owner-', ownerReferences: controlledBy(ownerUid) },
});

test('a create without an answer: the child the apiserver stored but the cache lacks is waited for', async () => {
  const store = new Store<KubeObject>();
  store.upsert(child('owner-old', 'u0', 'o1')); // seen before: not the lost create
  const live = [child('owner-old', 'u0', 'o1'), child('owner-lost', 'u1', 'o1'), child('other-x', 'u2', 'o2')];
  const { source, asked } = liveSource(store, live);
  const e = new Expectations({ now: () => 0, log: silentLogger });
  e.expectMaybeCreated('ns/owner', source, sentFor('o1'));
  assert.equal(e.unsure('ns/owner'), true);
  await e.resolve('ns/owner');
  assert.deepEqual(asked, ['ns'], "listed once, in the sent object's namespace");
  assert.equal(e.unsure('ns/owner'), false);
  assert.equal(e.satisfied('ns/owner'), false, 'owner-lost is not in the cache yet');
  assert.equal(e.pending('ns/owner'), 1, "only the owner's child the cache lacks (not another controller's)");
  store.upsert(child('owner-lost', 'u1', 'o1'));
  assert.equal(e.satisfied('ns/owner'), true);
});

test('a create without an answer that never happened holds nothing back; a named one is matched by name', async () => {
  const store = new Store<KubeObject>();
  const { source } = liveSource(store, [{ metadata: { namespace: 'ns', name: 'fixed', uid: 'u5' } }]);
  const e = new Expectations({ now: () => 0, log: silentLogger });
  e.expectMaybeCreated('ns/a', source, sentFor('o1'));
  await e.resolve('ns/a');
  assert.equal(e.satisfied('ns/a'), true, 'nothing of its controller was stored');
  e.expectMaybeCreated('ns/b', source, { metadata: { namespace: 'ns', name: 'fixed' } });
  await e.resolve('ns/b');
  assert.equal(e.satisfied('ns/b'), false, 'the name was stored: wait for it');
});

test('a failed look-up keeps the unsure create until it succeeds or the timeout passes', async () => {
  let now = 0;
  const store = new Store<KubeObject>();
  const fail = { error: new Error('connection reset') as Error | undefined };
  const { source, asked } = liveSource(store, [child('owner-lost', 'u1', 'o1')], fail);
  const e = new Expectations({ timeoutMs: 1_000, now: () => now, log: silentLogger });
  e.expectMaybeCreated('ns/owner', source, sentFor('o1'));
  await assert.rejects(e.resolve('ns/owner'), /connection reset/);
  assert.equal(e.unsure('ns/owner'), true, 'kept: still to be looked for');
  fail.error = undefined;
  await e.resolve('ns/owner');
  assert.equal(e.pending('ns/owner'), 1);
  e.clear('ns/owner');
  fail.error = new Error('still down');
  e.expectMaybeCreated('ns/owner', source, sentFor('o1'));
  now = 1_001;
  await e.resolve('ns/owner');
  assert.equal(e.unsure('ns/owner'), false, 'dropped at the timeout, with a warning');
  assert.equal(asked.length, 2, 'not listed once timed out');
});

test('a write is expected until the store holds the object at its resourceVersion or later, or not at all', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ log: silentLogger });
  store.upsert(pod('cfg', 'u1', '10'));
  e.expectWritten('ns/owner', store, pod('cfg', 'u1', '12'));
  assert.equal(e.satisfied('ns/owner'), false, 'the cache is still at 10');
  store.upsert(pod('cfg', 'u1', '11')); // someone else's write, before ours arrives
  assert.equal(e.satisfied('ns/owner'), false);
  store.upsert(pod('cfg', 'u1', '13')); // a relist skipped ours, landing after it
  assert.equal(e.satisfied('ns/owner'), true, 'a later decimal version counts');

  e.expectWritten('ns/owner', store, pod('cfg', 'u1', '20'));
  e.observe(pod('cfg', 'u1', '20'), false); // its event passed, then a newer one replaced it in the store
  store.upsert(pod('cfg', 'u1', '21'));
  assert.equal(e.satisfied('ns/owner'), true);

  e.expectWritten('ns/owner', store, pod('cfg', 'u1', '30'));
  store.remove(pod('cfg', 'u1', '21'));
  assert.equal(e.satisfied('ns/owner'), true, 'gone: nothing older can be read');
  store.upsert(pod('cfg', 'u2', '5'));
  e.expectWritten('ns/owner', store, pod('cfg', 'u1', '40'));
  assert.equal(e.satisfied('ns/owner'), true, 'replaced (another uid): nothing older of it can be read');
});

test('resourceVersions that are not decimal are only compared for equality', () => {
  const store = new Store<KubeObject>();
  const e = new Expectations({ log: silentLogger });
  e.expectWritten('ns/owner', store, pod('cfg', 'u1', 'b7'));
  store.upsert(pod('cfg', 'u1', 'c1'));
  assert.equal(e.satisfied('ns/owner'), false, 'opaque: c1 may or may not be after b7');
  store.upsert(pod('cfg', 'u1', 'b7'));
  assert.equal(e.satisfied('ns/owner'), true);
  e.expectWritten('ns/owner', store, pod('cfg', 'u1', '99999999999999999999999'));
  store.upsert(pod('cfg', 'u1', '100000000000000000000000')); // beyond 2^53: compared exactly
  assert.equal(e.satisfied('ns/owner'), true);
});
