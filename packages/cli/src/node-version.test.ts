import assert from 'node:assert/strict';
import { test } from 'node:test';
import { minimumOf, nodeVersionProblem } from './node-version.ts';

test('a Node older than engines.node gets one line naming both versions and what to install', () => {
  assert.equal(
    nodeVersionProblem('opkit', '>=24.11', 'v20.20.2'),
    'opkit needs Node ≥ 24.11 (this is v20.20.2): install Node 24 LTS or newer',
  );
  assert.equal(
    nodeVersionProblem('create-opkit', '>=22.18.1', 'v22.18.0'),
    'create-opkit needs Node ≥ 22.18.1 (this is v22.18.0): install Node 22 LTS or newer',
  );
  assert.equal(nodeVersionProblem('opkit', '>=24.11', 'v24.10.9')?.startsWith('opkit needs Node ≥ 24.11'), true);
});

test('the minimum itself and anything newer pass', () => {
  for (const v of ['v24.11.0', 'v24.21.0', 'v25.0.0', 'v26.1.0-nightly2026']) {
    assert.equal(nodeVersionProblem('opkit', '>=24.11', v), undefined, v);
  }
});

test('engines.node of another form is refused rather than guessed', () => {
  assert.deepEqual(minimumOf('>= 22.18'), [22, 18, 0]);
  assert.throws(() => minimumOf('^22 || ^24'), /not of the form >=X\.Y\.Z/);
});
