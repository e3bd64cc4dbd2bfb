import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../client/resource.ts';
import { ShardGate } from './gate.ts';

const inBucket = (b: number | string): KubeObject => ({
  metadata: { name: 'x', labels: { 'opkit.dev/shard': String(b) } },
});

test('only requests of active buckets are admitted; a hand-off waits for those under way, and can abort them', async () => {
  const gate = new ShardGate();
  assert.equal(gate.admit('ns/x', inBucket(3)), undefined, 'inactive bucket');
  assert.equal(gate.admit('ns/x', undefined), undefined, 'no object');
  assert.equal(gate.admit('ns/x', inBucket('nope')), undefined, 'no valid label');
  gate.activate(3);
  const t1 = gate.admit('ns/x', inBucket(3));
  const t2 = gate.admit('ns/y', inBucket(3));
  assert.ok(t1 && t2);
  assert.equal(gate.inFlight(3), 2);
  gate.deactivate(3);
  assert.equal(gate.admit('ns/z', inBucket(3)), undefined, 'no new work once deactivated');
  let drained = false;
  const waiting = gate.drained(3).then(() => {
    drained = true;
  });
  t1.end();
  t1.end();
  await new Promise((r) => setImmediate(r));
  assert.equal(drained, false, 'one still under way (an end counted once)');
  gate.abort(3, new Error('handed off'));
  assert.equal(t2.signal.aborted, true);
  t2.end();
  await waiting;
  assert.equal(gate.inFlight(3), 0);
  gate.activate(3);
  assert.equal(gate.admit('ns/x', inBucket(3))?.signal.aborted, false, 'a new activation has a new signal');
});

test('abortAll aborts the reconciles of active and draining buckets alike', () => {
  const gate = new ShardGate();
  gate.activate(1);
  gate.activate(2);
  const a = gate.admit('ns/a', inBucket(1));
  const b = gate.admit('ns/b', inBucket(2));
  gate.deactivate(2);
  gate.abortAll(new Error('stale'));
  assert.equal(a?.signal.aborted, true);
  assert.equal(b?.signal.aborted, true, 'a draining bucket too');
  assert.deepEqual(gate.active, []);
});
