import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Backoff } from './backoff.ts';

test('backoff doubles from the initial delay up to the cap, with jitter on top, and resets', () => {
  const b = new Backoff({ initialMs: 100, maxMs: 1_000, jitter: 0.5, random: () => 1 });
  assert.deepEqual([b.next(), b.next(), b.next(), b.next(), b.next(), b.next()], [150, 300, 600, 1200, 1500, 1500]);
  b.reset();
  assert.equal(b.next(), 150);
  const noJitter = new Backoff({ initialMs: 800, random: () => 0 });
  assert.equal(noJitter.next(), 800);
});
