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
