import assert from 'node:assert/strict';
import { test } from 'node:test';
import { exitCodeOf } from './run-operator.ts';

test('opkit run exits as a shell would: the exit code, or 128 + the number of the signal that ended the operator', () => {
  assert.equal(exitCodeOf(0, null), 0);
  assert.equal(exitCodeOf(3, null), 3);
  assert.equal(exitCodeOf(null, 'SIGINT'), 130);
  assert.equal(exitCodeOf(null, 'SIGTERM'), 143);
  assert.equal(exitCodeOf(null, 'SIGKILL'), 137);
  assert.equal(exitCodeOf(null, null), 1);
});

test('a Ctrl-C that the operator handles cleanly (exit 0) still makes opkit run exit 130; a failure keeps its code', () => {
  assert.equal(exitCodeOf(0, null, 'SIGINT'), 130);
  assert.equal(exitCodeOf(null, 'SIGINT', 'SIGINT'), 130);
  assert.equal(exitCodeOf(0, null, 'SIGTERM'), 143);
  assert.equal(exitCodeOf(1, null, 'SIGINT'), 1, 'the operator failed while stopping: its code');
});
