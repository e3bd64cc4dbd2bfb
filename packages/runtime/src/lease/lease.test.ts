import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease } from '../client/builtins.ts';
import { FakeClock } from '../workqueue/clock.ts';
import { holderSpec, LeaseHold, LeaseJudge } from './lease.ts';

test('a hold is lost exactly once: at its deadline timer, a late check or a late renewal, whichever comes first', () => {
  const clock = new FakeClock(0);
  let lost = 0;
  const hold = new LeaseHold({ renewDeadlineMs: 10_000, clock, onLost: () => lost++ });
  assert.equal(hold.check(), false, 'never held');
  assert.equal(lost, 0, 'a hold never held is not lost');
  assert.equal(hold.renewed(0), true);
  clock.advance(9_999);
  assert.equal(hold.check(), true);
  assert.equal(hold.renewed(5_000), true, 'renewed as of the start of the renewal');
  assert.equal(hold.deadline, 15_000);
  clock.advance(5_001); // to 15,000: the deadline's timer fires at the deadline, not a millisecond after it
  assert.equal(lost, 1);
  assert.equal(hold.check(), false);
  assert.equal(lost, 1, 'once');

  // a renewal that was in flight through a pause does not revive the hold: it loses it
  assert.equal(hold.renewed(clock.now()), true);
  const started = clock.now();
  assert.equal(hold.renewed(started - 10_000), false);
  assert.equal(lost, 2);
  hold.release();
  assert.equal(hold.check(), false);
  assert.equal(lost, 2, 'a release is not a loss');
});

test('a holder is dead once its Lease went unchanged for the duration, by this clock; any write is a sign of life', () => {
  const clock = new FakeClock(0);
  const judge = new LeaseJudge(clock);
  const lease = (rv: string, renewTime = '2020-01-01T00:00:00.000000Z'): Lease => ({
    metadata: { name: 'l', resourceVersion: rv },
    spec: { holderIdentity: 'x', renewTime },
  });
  assert.equal(judge.dead('l', 15_000), false, 'never seen: not judged');
  judge.observe('l', lease('1'));
  clock.advance(14_000);
  judge.observe('l', lease('1', '2099-01-01T00:00:00.000000Z')); // the times written are not read
  assert.equal(judge.dead('l', 15_000), false);
  clock.advance(1_000);
  assert.equal(judge.dead('l', 15_000), true);
  judge.observe('l', lease('2'));
  assert.equal(judge.dead('l', 15_000), false, 'changed: alive again');
  assert.equal(judge.expiresAt('l', 15_000), 30_000);
  assert.equal(judge.version('l'), '2');
});

test('holderSpec: acquireTime and leaseTransitions move only when the holder changes to someone', () => {
  const t = new Date('2030-01-01T00:00:00.123Z');
  const created = holderSpec(undefined, 'a', 15_000, t);
  assert.deepEqual(created, {
    holderIdentity: 'a',
    leaseDurationSeconds: 15,
    renewTime: '2030-01-01T00:00:00.123000Z',
    acquireTime: '2030-01-01T00:00:00.123000Z',
    leaseTransitions: 0,
  });
  const later = new Date('2030-01-01T00:00:02Z');
  const renewed = holderSpec(created, 'a', 15_000, later);
  assert.equal(renewed.acquireTime, created.acquireTime);
  assert.equal(renewed.leaseTransitions, 0);
  const freed = holderSpec(renewed, '', 15_000, later);
  assert.equal(freed.leaseTransitions, 0);
  const taken = holderSpec(freed, 'b', 15_000, later);
  assert.equal(taken.leaseTransitions, 1);
  assert.equal(taken.acquireTime, '2030-01-01T00:00:02.000000Z');
});

test('a deadline timer that fires early is set again: the hold is lost at its deadline, not at the next check', () => {
  // a clock whose timers fire up to 1.5 ms before the time they were set for, as Node's may against performance.now()
  const clock = new FakeClock(0);
  const early = {
    now: () => clock.now(),
    setTimer: (ms: number, fn: () => void) => clock.setTimer(ms - Math.min(1.5, ms / 2), fn),
  };
  let lostAt: number | undefined;
  const hold = new LeaseHold({ renewDeadlineMs: 10_000, clock: early, onLost: () => (lostAt = clock.now()) });
  hold.renewed(0);
  clock.advance(9_999);
  assert.equal(lostAt, undefined);
  clock.advance(10);
  assert.ok(lostAt !== undefined && lostAt >= 10_000 && lostAt <= 10_005, `lost at ${lostAt}`);
});
