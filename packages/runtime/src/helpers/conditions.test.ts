import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../errors.ts';
import {
  type Condition,
  getCondition,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  removeCondition,
  setCondition,
} from './conditions.ts';

const t0 = new Date('2024-05-01T12:00:00.123Z');
const t1 = new Date('2024-05-01T12:05:00.999Z');

test('the first set appends the condition with lastTransitionTime = now (seconds precision)', () => {
  const { conditions, changed } = setCondition(undefined, { type: 'Ready', status: 'False', reason: 'Pending' }, t0);
  assert.equal(changed, true);
  assert.deepEqual(conditions, [
    { type: 'Ready', status: 'False', reason: 'Pending', message: '', lastTransitionTime: '2024-05-01T12:00:00Z' },
  ]);
  const more = setCondition(conditions, { type: 'Available', status: 'True', reason: 'Up', message: 'ok' }, t1);
  assert.deepEqual(
    more.conditions.map((c) => c.type),
    ['Ready', 'Available'],
    'a new type is appended, order is kept',
  );
  assert.equal(getCondition(more.conditions, 'Available')?.lastTransitionTime, '2024-05-01T12:05:00Z');
});

test('same status with a new reason or message keeps the transition time but reports a change', () => {
  const first = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending', message: 'a' }, t0);
  const second = setCondition(
    first.conditions,
    { type: 'Ready', status: 'False', reason: 'Waiting', message: 'b' },
    t1,
  );
  assert.equal(second.changed, true);
  assert.deepEqual(second.conditions, [
    { type: 'Ready', status: 'False', reason: 'Waiting', message: 'b', lastTransitionTime: '2024-05-01T12:00:00Z' },
  ]);
});

test('identical input reports no change and returns the same content in a new array', () => {
  const input = { type: 'Ready', status: 'True', reason: 'Done', message: 'm', observedGeneration: 3 } as const;
  const first = setCondition([], input, t0);
  const again = setCondition(first.conditions, input, t1);
  assert.equal(again.changed, false);
  assert.deepEqual(again.conditions, first.conditions);
  assert.notEqual(again.conditions, first.conditions);
  assert.notEqual(again.conditions[0], first.conditions[0]);
});

test('a status flip moves lastTransitionTime', () => {
  const first = setCondition([], { type: 'Ready', status: 'False', reason: 'Pending' }, t0);
  const flipped = setCondition(first.conditions, { type: 'Ready', status: 'True', reason: 'Done' }, t1);
  assert.equal(flipped.changed, true);
  assert.equal(flipped.conditions[0]?.lastTransitionTime, '2024-05-01T12:05:00Z');
  const unknown = setCondition(flipped.conditions, { type: 'Ready', status: 'Unknown', reason: 'Lost' }, t0);
  assert.equal(unknown.conditions[0]?.lastTransitionTime, '2024-05-01T12:00:00Z');
});

test('observedGeneration is recorded, and updating it alone keeps the transition time', () => {
  const first = setCondition([], { type: 'Ready', status: 'True', reason: 'Done', observedGeneration: 1 }, t0);
  assert.equal(first.conditions[0]?.observedGeneration, 1);
  const next = setCondition(
    first.conditions,
    { type: 'Ready', status: 'True', reason: 'Done', observedGeneration: 2 },
    t1,
  );
  assert.equal(next.changed, true);
  assert.equal(next.conditions[0]?.observedGeneration, 2);
  assert.equal(next.conditions[0]?.lastTransitionTime, '2024-05-01T12:00:00Z');
  const dropped = setCondition(next.conditions, { type: 'Ready', status: 'True', reason: 'Done' }, t1);
  assert.equal(dropped.changed, true);
  assert.equal('observedGeneration' in (dropped.conditions[0] ?? {}), false, 'left out means removed');
});

test('never mutates the input array or its conditions', () => {
  const original: Condition[] = [
    { type: 'Ready', status: 'False', reason: 'Pending', message: 'a', lastTransitionTime: '2024-01-01T00:00:00Z' },
    { type: 'Synced', status: 'True', reason: 'Ok', message: '', lastTransitionTime: '2024-01-01T00:00:00Z' },
  ];
  const snapshot = structuredClone(original);
  const frozen = Object.freeze(original.map((c) => Object.freeze({ ...c })));
  const set = setCondition(frozen, { type: 'Ready', status: 'True', reason: 'Done' }, t1);
  setCondition(original, { type: 'Ready', status: 'True', reason: 'Done' }, t1);
  setCondition(original, { type: 'New', status: 'True', reason: 'Done' }, t1);
  removeCondition(original, 'Ready');
  assert.deepEqual(original, snapshot);
  assert.equal(set.conditions[0]?.status, 'True');
  const first = set.conditions[0];
  assert.ok(first);
  first.message = 'edited';
  assert.equal(frozen[0]?.message, 'a', 'the result shares no objects with the input');
});

test('removeCondition removes by type and reports whether it did', () => {
  const { conditions } = setCondition(
    setCondition([], { type: 'A', status: 'True', reason: 'X' }, t0).conditions,
    { type: 'B', status: 'False', reason: 'Y' },
    t0,
  );
  const removed = removeCondition(conditions, 'A');
  assert.equal(removed.changed, true);
  assert.deepEqual(
    removed.conditions.map((c) => c.type),
    ['B'],
  );
  const none = removeCondition(removed.conditions, 'A');
  assert.equal(none.changed, false);
  assert.deepEqual(none.conditions, removed.conditions);
  assert.deepEqual(removeCondition(undefined, 'A'), { conditions: [], changed: false });
});

test('isConditionTrue / isConditionFalse / isConditionUnknown', () => {
  let list: Condition[] = [];
  assert.equal(isConditionTrue(list, 'Ready'), false);
  assert.equal(isConditionFalse(list, 'Ready'), false);
  assert.equal(isConditionUnknown(list, 'Ready'), true, 'absent counts as Unknown');
  assert.equal(isConditionUnknown(undefined, 'Ready'), true);
  list = setCondition(list, { type: 'Ready', status: 'True', reason: 'Done' }, t0).conditions;
  assert.deepEqual(
    [isConditionTrue(list, 'Ready'), isConditionFalse(list, 'Ready'), isConditionUnknown(list, 'Ready')],
    [true, false, false],
  );
  list = setCondition(list, { type: 'Ready', status: 'False', reason: 'Broken' }, t0).conditions;
  assert.deepEqual(
    [isConditionTrue(list, 'Ready'), isConditionFalse(list, 'Ready'), isConditionUnknown(list, 'Ready')],
    [false, true, false],
  );
  list = setCondition(list, { type: 'Ready', status: 'Unknown', reason: 'Lost' }, t0).conditions;
  assert.deepEqual(
    [isConditionTrue(list, 'Ready'), isConditionFalse(list, 'Ready'), isConditionUnknown(list, 'Ready')],
    [false, false, true],
  );
});

test('invalid input is a UsageError naming the field and the value', () => {
  const bad = (input: Parameters<typeof setCondition>[1], pattern: RegExp) =>
    assert.throws(
      () => setCondition([], input, t0),
      (e) => e instanceof UsageError && pattern.test(e.message),
    );
  bad({ type: '', status: 'True', reason: 'Ok' }, /type must be a non-empty string, got ""/);
  bad({ type: 'Ready', status: 'True', reason: '' }, /reason must be CamelCase .*got ""/);
  bad({ type: 'Ready', status: 'True', reason: 'has space' }, /reason .*got "has space"/);
  bad({ type: 'Ready', status: 'True', reason: '1Start' }, /reason .*got "1Start"/);
  bad({ type: 'Ready', status: 'True', reason: 'Trailing:' }, /reason .*got "Trailing:"/);
  bad({ type: 'Ready', status: 'Yes' as 'True', reason: 'Ok' }, /status must be .*got "Yes"/);
  bad({ type: 'Ready', status: 'True', reason: 'Ok', observedGeneration: -1 }, /observedGeneration .*got -1/);
  for (const reason of ['A', 'Ok', 'Reason_1', 'A,B:C_d', 'camelCase']) {
    assert.doesNotThrow(() => setCondition([], { type: 'Ready', status: 'True', reason }, t0), reason);
  }
});
