import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ginkgoCounts, nodeTestCounts } from './suites.ts';

test('ginkgoCounts: the specs run and failed, summed over the packages', () => {
  const out = [
    'Ran 7 of 7 Specs in 18.402 seconds',
    'SUCCESS! -- 7 Passed | 0 Failed | 0 Pending | 0 Skipped',
    'ok  \ttutorial.kubebuilder.io/project/internal/controller\t19.1s',
    'Ran 2 of 2 Specs in 4.610 seconds',
    'FAIL! -- 1 Passed | 1 Failed | 0 Pending | 0 Skipped',
  ].join('\n');
  assert.deepEqual(ginkgoCounts(out), { tests: 9, failed: 1, packages: 2 });
  assert.deepEqual(ginkgoCounts('no tests'), { tests: 0, failed: 0, packages: 0 });
  const colored =
    '\x1b[38;5;10m\x1b[1mRan 8 of 8 Specs in 6.408 seconds\x1b[0m\n\x1b[38;5;9m\x1b[1m0 Failed\x1b[0m | 0 Pending';
  assert.deepEqual(ginkgoCounts(colored), { tests: 8, failed: 0, packages: 1 });
});

test('nodeTestCounts: the last report’s totals', () => {
  assert.deepEqual(nodeTestCounts('ℹ tests 3\nℹ fail 1\n…\nℹ tests 29\nℹ pass 29\nℹ fail 0\n'), {
    tests: 29,
    failed: 0,
  });
});
