import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stalePart } from './monitor.ts';

const o = (name: string, resourceVersion: string) => ({ metadata: { name, resourceVersion } });

test('stalePart: a view is current only with the same objects at the same resourceVersions', () => {
  assert.equal(stalePart([o('a', '1'), o('b', '2')], [o('b', '2'), o('a', '1')]), undefined);
  assert.equal(stalePart([], []), undefined);
  assert.equal(stalePart([o('a', '1')], [o('a', '1'), o('b', '3')]), 'b not seen yet');
  assert.equal(stalePart([o('a', '1')], [o('a', '4')]), 'a seen at resourceVersion 1, now 4');
  assert.equal(stalePart([o('a', '1'), o('b', '2')], [o('a', '1')]), 'b deleted, still seen');
});
