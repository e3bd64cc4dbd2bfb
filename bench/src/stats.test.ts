import assert from 'node:assert/strict';
import { test } from 'node:test';
import { round, summarize } from './stats.ts';

test('summarize gives the median (odd and even counts) and the spread', () => {
  assert.deepEqual(summarize([3, 1, 2]), { median: 2, min: 1, max: 3, n: 3 });
  assert.deepEqual(summarize([4, 1, 3, 2]), { median: 2.5, min: 1, max: 4, n: 4 });
  assert.throws(() => summarize([]));
  assert.equal(round(1.23456, 2), 1.23);
});
