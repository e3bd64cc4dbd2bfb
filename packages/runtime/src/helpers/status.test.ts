import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jsonEqual, statusPatch } from './status.ts';

test('jsonEqual ignores key order and undefined members, not array order', () => {
  assert.ok(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }));
  assert.ok(jsonEqual({ a: 1, b: undefined }, { a: 1 }));
  assert.ok(!jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!jsonEqual({ a: 1 }, { a: '1' }));
  assert.ok(!jsonEqual(undefined, {}));
  assert.ok(jsonEqual(null, null));
  assert.ok(!jsonEqual([], {}));
});

test('statusPatch sets the new fields and removes the ones that went away', () => {
  assert.deepEqual(statusPatch({ a: 1, b: [1], c: 'x' }, { a: 2, b: [1, 2] }), {
    status: { a: 2, b: [1, 2], c: null },
  });
  assert.deepEqual(statusPatch(undefined, { a: 1 }), { status: { a: 1 } });
});
