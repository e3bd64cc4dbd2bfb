import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import { TokenBucket } from './bucket.ts';

test('TokenBucket lets the burst through, then spaces reservations 1000/qps ms apart, and refills with time', () => {
  let now = 0;
  const bucket = new TokenBucket(10, 2, () => now, 'test');
  assert.deepEqual([bucket.reserve(), bucket.reserve()], [0, 0]);
  assert.deepEqual([bucket.reserve(), bucket.reserve()], [100, 200], 'each reservation takes a future token');
  now = 200;
  assert.equal(bucket.reserve(), 100, 'the reserved tokens were paid back first');
  now = 60_000;
  assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 100], 'never more than the burst');
  now = 0;
  assert.equal(bucket.reserve(), 200, 'time that runs backwards refills nothing');
});

test('TokenBucket.take waits for its token, and rejects with the reason as soon as the signal aborts', async () => {
  const bucket = new TokenBucket(20, 1, () => performance.now(), 'test');
  await bucket.take(undefined);
  const started = performance.now();
  await bucket.take(new AbortController().signal);
  assert.ok(performance.now() - started >= 40, 'the second token exists 50 ms after the first');
  const controller = new AbortController();
  const waiting = bucket.take(controller.signal);
  const reason = new Error('stop');
  controller.abort(reason);
  await assert.rejects(waiting, (err) => err === reason);
});

test('TokenBucket refuses a qps that is not > 0 and a burst below 1 (UsageError, naming its owner)', () => {
  const now = () => 0;
  for (const [qps, burst] of [
    [0, 1],
    [-1, 1],
    [Number.NaN, 1],
    [1, 0],
    [1, 0.5],
  ] as const) {
    assert.throws(
      () => new TokenBucket(qps, burst, now, 'Client'),
      (err) => err instanceof UsageError && err.code === 'InvalidArgument' && err.message.startsWith('Client: '),
    );
  }
});
