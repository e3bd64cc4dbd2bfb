import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import { FakeClock } from './clock.ts';
import {
  BucketRateLimiter,
  defaultControllerRateLimiter,
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  type RateLimiter,
} from './ratelimiter.ts';

const whenTimes = <K>(limiter: RateLimiter<K>, item: K, n: number): number[] =>
  Array.from({ length: n }, () => limiter.when(item));

test('ItemExponentialRateLimiter doubles from the base per item, caps at the max, and forget resets', () => {
  const limiter = new ItemExponentialRateLimiter<string>();
  assert.deepEqual(whenTimes(limiter, 'ns/a', 5), [5, 10, 20, 40, 80]);
  assert.equal(limiter.retries('ns/a'), 5);
  assert.equal(limiter.when('ns/b'), 5, 'items back off independently');
  limiter.forget('ns/a');
  assert.equal(limiter.retries('ns/a'), 0);
  assert.equal(limiter.when('ns/a'), 5);

  const capped = new ItemExponentialRateLimiter<string>(5, 1_000);
  assert.deepEqual(whenTimes(capped, 'x', 10), [5, 10, 20, 40, 80, 160, 320, 640, 1_000, 1_000]);
  const defaults = new ItemExponentialRateLimiter<string>();
  const many = whenTimes(defaults, 'x', 2_000);
  assert.equal(many.at(-1), 1_000_000, 'the default cap is 1000 s, and huge retry counts stay finite');
  assert.ok(many.every((d) => Number.isFinite(d) && d >= 0));
  assert.deepEqual(whenTimes(new ItemExponentialRateLimiter<string>(0, 10), 'x', 1_100).at(-1), 0);
  assert.throws(() => new ItemExponentialRateLimiter<string>(-1), UsageError);
});

test('BucketRateLimiter lets a burst through, then spaces tokens 1000/qps ms apart, refilling with time', () => {
  const clock = new FakeClock();
  const limiter = new BucketRateLimiter<string>(10, 100, clock);
  const burst = Array.from({ length: 100 }, (_, i) => limiter.when(`ns/item-${i}`));
  assert.ok(burst.every((d) => d === 0));
  assert.deepEqual(whenTimes(limiter, 'ns/late', 3), [100, 200, 300], 'each when() reserves the next token');
  clock.advance(300);
  assert.equal(limiter.when('ns/late'), 100, 'the reserved tokens were paid back, the bucket is empty again');
  clock.advance(60_000);
  const refilled = Array.from({ length: 100 }, (_, i) => limiter.when(`ns/again-${i}`));
  assert.ok(
    refilled.every((d) => d === 0),
    'a full bucket after a long pause, but no more than the burst',
  );
  assert.equal(limiter.when('ns/again-0'), 100);
});

test('BucketRateLimiter counts retries per item and forget resets the count, not the bucket', () => {
  const clock = new FakeClock();
  const limiter = new BucketRateLimiter<string>(2, 1, clock);
  assert.deepEqual(whenTimes(limiter, 'a', 3), [0, 500, 1_000]);
  assert.equal(limiter.retries('a'), 3);
  assert.equal(limiter.retries('b'), 0);
  limiter.forget('a');
  assert.equal(limiter.retries('a'), 0);
  assert.equal(limiter.when('a'), 1_500);
  assert.throws(() => new BucketRateLimiter<string>(0, 1, clock), UsageError);
  assert.throws(() => new BucketRateLimiter<string>(1, 0, clock), UsageError);
});

test('MaxOfRateLimiter returns the longest delay and forwards forget and retries', () => {
  const fixed = (ms: number): RateLimiter<string> & { calls: number; forgotten: string[] } => ({
    calls: 0,
    forgotten: [],
    when() {
      this.calls++;
      return ms;
    },
    forget(item) {
      this.forgotten.push(item);
    },
    retries() {
      return this.calls;
    },
  });
  const a = fixed(7);
  const b = fixed(3);
  const limiter = new MaxOfRateLimiter(a, b, new ItemExponentialRateLimiter<string>(1, 100));
  assert.deepEqual(whenTimes(limiter, 'x', 5), [7, 7, 7, 8, 16]);
  assert.equal(a.calls, 5, 'every limiter counts each retry');
  assert.equal(b.calls, 5);
  assert.equal(limiter.retries('x'), 5);
  limiter.forget('x');
  assert.deepEqual(a.forgotten, ['x']);
  assert.deepEqual(b.forgotten, ['x']);
  assert.equal(new MaxOfRateLimiter<string>().when('x'), 0);
});

test('defaultControllerRateLimiter with the overall bucket: per-item backoff from 5 ms, 10 qps after a burst of 100', () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter<string>(clock, { overall: { qps: 10, burst: 100 } });
  assert.deepEqual(whenTimes(limiter, 'ns/a', 4), [5, 10, 20, 40]);
  assert.equal(limiter.retries('ns/a'), 4);
  // 4 tokens are gone; 96 more distinct first failures still only see the 5 ms item backoff.
  const firsts = Array.from({ length: 96 }, (_, i) => limiter.when(`ns/item-${i}`));
  assert.ok(firsts.every((d) => d === 5));
  // The bucket is empty: a new item now waits for the bucket (100 ms), not its own 5 ms.
  assert.equal(limiter.when('ns/new'), 100);
  assert.equal(limiter.when('ns/new2'), 200);
  limiter.forget('ns/a');
  assert.equal(limiter.retries('ns/a'), 0);
  clock.advance(1_000_000);
  assert.equal(limiter.when('ns/a'), 5, 'forget reset the backoff and time refilled the bucket');
  // Long backoff wins over the bucket: keep failing one item until it reaches the 1000 s cap.
  const schedule = whenTimes(limiter, 'ns/slow', 30);
  assert.equal(schedule.at(-1), 1_000_000);
});

test('the default limiter is per-item backoff alone: 600 simultaneous failures each get their first retry at 5 ms', () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter<string>(clock);
  const firsts = Array.from({ length: 600 }, (_, i) => limiter.when(`ns/item-${i}`));
  assert.equal(Math.max(...firsts), 5, `the 600th first retry waits ${firsts.at(-1)} ms`);
  assert.ok(firsts.every((d) => d === 5));
  assert.deepEqual(whenTimes(limiter, 'ns/item-599', 3), [10, 20, 40], 'each item still backs off on its own');
  assert.equal(limiter.retries('ns/item-599'), 4);
});

test('defaultControllerRateLimiter({ overall }) adds the shared token bucket on top (client-go DefaultControllerRateLimiter)', () => {
  const clock = new FakeClock();
  const limiter = defaultControllerRateLimiter<string>(clock, { overall: { qps: 10, burst: 100 } });
  const firsts = Array.from({ length: 600 }, (_, i) => limiter.when(`ns/item-${i}`));
  assert.ok(firsts.slice(0, 100).every((d) => d === 5));
  assert.equal(firsts[100], 100);
  assert.equal(firsts[599], 50_000, 'the 600th waits 50 s for the bucket');
  assert.throws(() => defaultControllerRateLimiter<string>(clock, { overall: { qps: 0, burst: 1 } }), UsageError);
});
