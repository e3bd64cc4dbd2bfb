import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import { FakeClock, realClock } from './clock.ts';

test('FakeClock starts at the given time and only moves with advance()', () => {
  assert.equal(new FakeClock().now(), 0);
  const clock = new FakeClock(1_000);
  assert.equal(clock.now(), 1_000);
  clock.advance(250);
  assert.equal(clock.now(), 1_250);
  clock.advance(0);
  assert.equal(clock.now(), 1_250);
  assert.throws(() => clock.advance(-1), UsageError);
});

test('FakeClock fires due timers in time order, then creation order, at their due time', () => {
  const clock = new FakeClock();
  const fired: string[] = [];
  const at = (name: string) => () => fired.push(`${name}@${clock.now()}`);
  clock.setTimer(30, at('c'));
  clock.setTimer(10, at('a'));
  clock.setTimer(20, at('b1'));
  clock.setTimer(20, at('b2'));
  clock.setTimer(0, at('zero'));
  assert.equal(clock.pendingTimers(), 5);
  clock.advance(20);
  assert.deepEqual(fired, ['zero@0', 'a@10', 'b1@20', 'b2@20']);
  assert.equal(clock.now(), 20);
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(100);
  assert.deepEqual(fired.at(-1), 'c@30');
  assert.equal(clock.now(), 120);
  assert.equal(clock.pendingTimers(), 0);
});

test('FakeClock fires timers set by timers when they fall due within the same advance()', () => {
  const clock = new FakeClock();
  const fired: number[] = [];
  const tick = () => {
    fired.push(clock.now());
    clock.setTimer(10, tick);
  };
  clock.setTimer(10, tick);
  clock.advance(35);
  assert.deepEqual(fired, [10, 20, 30]);
  assert.equal(clock.pendingTimers(), 1);
});

test('FakeClock timers can be cancelled, also twice and after firing', () => {
  const clock = new FakeClock();
  let fired = 0;
  const a = clock.setTimer(10, () => fired++);
  const b = clock.setTimer(5, () => fired++);
  a.cancel();
  a.cancel();
  assert.equal(clock.pendingTimers(), 1);
  clock.advance(10);
  assert.equal(fired, 1);
  b.cancel();
  assert.equal(clock.pendingTimers(), 0);
});

test('realClock reads Date.now and its timers fire, can be cancelled, and do not hold the process', async () => {
  const before = Date.now();
  const now = realClock.now();
  assert.ok(now >= before && now <= Date.now());
  let cancelledFired = false;
  realClock
    .setTimer(0, () => {
      cancelledFired = true;
    })
    .cancel();
  await new Promise<void>((resolve) => realClock.setTimer(1, resolve));
  await new Promise<void>((resolve) => setImmediate(resolve));
  assert.equal(cancelledFired, false);
});

test('realClock timers are unref()d so they never keep the process alive', (t) => {
  const setTimeoutSpy = t.mock.method(globalThis, 'setTimeout');
  const timer = realClock.setTimer(60_000, () => {});
  const handle = setTimeoutSpy.mock.calls[0]?.result;
  timer.cancel();
  assert.ok(handle !== undefined && typeof handle === 'object');
  assert.equal(handle.hasRef(), false);
});

test('realClock chains delays beyond the setTimeout limit', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  let fired = 0;
  realClock.setTimer(2 ** 31 - 1 + 5_000, () => fired++);
  t.mock.timers.tick(2 ** 31 - 1);
  assert.equal(fired, 0);
  t.mock.timers.tick(4_999);
  assert.equal(fired, 0);
  t.mock.timers.tick(1);
  assert.equal(fired, 1);
});
