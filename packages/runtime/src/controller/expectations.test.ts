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
