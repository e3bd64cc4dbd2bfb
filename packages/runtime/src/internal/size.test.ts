import assert from 'node:assert/strict';
import { test } from 'node:test';
import { estimatedBytes } from './size.ts';

test('estimatedBytes: exact for objects of one size, UTF-8 bytes (non-ASCII counted as such), 0 when empty', () => {
  const one = { metadata: { name: 'pod-ü' } }; // 'ü' is 2 bytes in UTF-8
  const size = Buffer.byteLength(JSON.stringify(one));
  assert.equal(size, JSON.stringify(one).length + 1);
  assert.equal(estimatedBytes(Array(1_000).fill(one), 1_000), 1_000 * size);
  assert.equal(estimatedBytes([], 0), 0);
});

test('estimatedBytes: serializes at most `sample` objects, spread over the whole store', () => {
  let serialized = 0;
  const objects = Array.from({ length: 10_000 }, (_, i) => ({
    toJSON: () => {
      serialized++;
      return { n: i < 5_000 ? 'a' : 'bbbbbbbbb' }; // the second half is bigger: a sample of the first would miss it
    },
  }));
  const estimate = estimatedBytes(objects, objects.length, 64);
  assert.equal(serialized, 64);
  const exact = 5_000 * Buffer.byteLength('{"n":"a"}') + 5_000 * Buffer.byteLength('{"n":"bbbbbbbbb"}');
  assert.ok(Math.abs(estimate - exact) / exact < 0.05, `${estimate} against ${exact}`);
});

test('estimatedBytes: a store just over the sample size is sampled over its whole length', () => {
  const objects = Array.from({ length: 127 }, (_, i) => ({ n: i < 64 ? '' : 'x'.repeat(1_000) }));
  const exact = objects.reduce((n, o) => n + Buffer.byteLength(JSON.stringify(o)), 0);
  const estimate = estimatedBytes(objects, objects.length, 64);
  assert.ok(Math.abs(estimate - exact) / exact < 0.05, `${estimate} against ${exact}`);
});
