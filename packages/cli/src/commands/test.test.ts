import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nodeTestArguments } from './test.ts';

test('opkit test: every test file one at a time by default; files and flags given replace or add', () => {
  assert.deepEqual(nodeTestArguments([]), ['--test', '--test-concurrency=1', 'test/**/*.test.ts']);
  assert.deepEqual(nodeTestArguments(['test/a.test.ts', '--test-name-pattern=Ready']), [
    '--test',
    '--test-concurrency=1',
    'test/a.test.ts',
    '--test-name-pattern=Ready',
  ]);
  assert.deepEqual(nodeTestArguments(['--test-only']), [
    '--test',
    '--test-concurrency=1',
    '--test-only',
    'test/**/*.test.ts',
  ]);
  assert.deepEqual(nodeTestArguments(['--test-concurrency=2']), [
    '--test',
    '--test-concurrency=2',
    'test/**/*.test.ts',
  ]);
});
