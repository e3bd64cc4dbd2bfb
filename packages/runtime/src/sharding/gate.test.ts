import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '../client/resource.ts';
import type { GateAnswer, RequestTicket } from '../controller/controller.ts';
import { FakeClock } from '../workqueue/clock.ts';
import { ShardGate } from './gate.ts';

/** The ticket of an admitted request (fails the test on any other answer). */
function ticket(a: GateAnswer): RequestTicket {
  assert.ok(a && 'signal' in a, `admitted: ${JSON.stringify(a)}`);
  return a;
}

const inShard = (b: number | string): KubeObject => ({
  metadata: { name: 'x', labels: { 'opkit.dev/shard': String(b) } },
});

test('only requests of active shards are admitted; a hand-off waits for those under way, and can abort them', async () => {
  const gate = new ShardGate();
  assert.equal(gate.admit('ns/x', inShard(3)), undefined, 'inactive shard');
  assert.equal(gate.admit('ns/x', undefined), undefined, 'no object');
  assert.equal(gate.admit('ns/x', inShard('nope')), undefined, 'no valid label');
  gate.activate(3);
  const t1 = ticket(gate.admit('ns/x', inShard(3)));
  const t2 = ticket(gate.admit('ns/y', inShard(3)));
  assert.equal(gate.inFlight(3), 2);
  gate.deactivate(3);
  assert.equal(gate.admit('ns/z', inShard(3)), undefined, 'no new work once deactivated');
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
  assert.equal(ticket(gate.admit('ns/x', inShard(3))).signal.aborted, false, 'a new activation has a new signal');
});

test('abortAll aborts the reconciles of active and draining shards alike', () => {
  const gate = new ShardGate();
  gate.activate(1);
  gate.activate(2);
  const a = ticket(gate.admit('ns/a', inShard(1)));
  const b = ticket(gate.admit('ns/b', inShard(2)));
  gate.deactivate(2);
  gate.abortAll(new Error('stale'));
  assert.equal(a.signal.aborted, true);
  assert.equal(b.signal.aborted, true, 'a draining shard too');
  assert.deepEqual(gate.active, []);
});

test('nothing is admitted, and no request of an admitted reconcile goes out, once holds() answers false', () => {
  let fresh = true;
  const gate = new ShardGate({ holds: () => fresh });
  gate.activate(1);
  const t = ticket(gate.admit('ns/a', inShard(1)));
  assert.doesNotThrow(() => t.guard?.());
  assert.doesNotThrow(() => gate.check(1));
  assert.throws(() => gate.check(2), /shard 2 is not active here/);
  fresh = false; // the member Lease went stale: no timer has run yet
  assert.throws(() => t.guard?.(), /the member Lease is not fresh/);
  assert.throws(() => gate.check(1), /the member Lease is not fresh/);
  assert.equal(gate.admit('ns/b', inShard(1)), undefined);
});

test('an object that leaves for a shard not active here has its reconcile aborted; one that arrives waits holdMs', () => {
  const clock = new FakeClock(0);
  const gate = new ShardGate({ holdMs: 3_000, clock });
  gate.activate(1);
  gate.activate(2);
  const a = ticket(gate.admit('ns/a', inShard(1)));
  gate.left('ns/a', 2);
  assert.equal(a.signal.aborted, false, 'moved to a shard held here too: goes on');
  const other = ticket(gate.admit('ns/b', inShard(1)));
  gate.left('ns/a', 7);
  assert.equal(a.signal.aborted, true, 'moved away: aborted at once');
  assert.throws(() => a.guard?.(), /the object left shard 1/);
  assert.equal(other.signal.aborted, false, 'the other reconciles of the shard go on');
  a.end();
  gate.left('ns/b', undefined);
  assert.equal(other.signal.aborted, true, 'deleted (or out of every partition here): aborted');
  other.end();
  assert.equal(gate.inFlight(1), 0);

  gate.arrived('ns/c');
  assert.deepEqual(gate.admit('ns/c', inShard(2)), { retryAfterMs: 100 }, 'asked again soon');
  clock.advance(2_950);
  assert.deepEqual(gate.admit('ns/c', inShard(2)), { retryAfterMs: 50 });
  clock.advance(50);
  ticket(gate.admit('ns/c', inShard(2))).end();
  ticket(gate.admit('ns/c', inShard(2))).end();
});

test('hold: requests wait until the promise settles, maxMs at most', async () => {
  const clock = new FakeClock(0);
  const gate = new ShardGate({ clock });
  gate.activate(4);
  let settle = () => {};
  gate.hold('ns/o', new Promise<void>((r) => (settle = r)), 3_000);
  assert.deepEqual(gate.admit('ns/o', inShard(4)), { retryAfterMs: 100 });
  settle();
  await new Promise((r) => setImmediate(r));
  ticket(gate.admit('ns/o', inShard(4))).end();
  gate.hold('ns/p', new Promise<void>(() => {}), 3_000); // never settles
  clock.advance(3_000);
  ticket(gate.admit('ns/p', inShard(4))).end();
});
