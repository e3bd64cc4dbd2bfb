import assert from 'node:assert/strict';
import { test } from 'node:test';
import { valueArgs } from './deploy-helm.ts';

test('the value flags after -- are the ones helm template renders with; the others are for helm upgrade only', () => {
  assert.deepEqual(
    valueArgs([
      '--set',
      'a=1',
      '--wait',
      '-f',
      'values.yaml',
      '--set-string=b=2',
      '--timeout',
      '5m',
      '-fmore.yaml',
      '--reuse-values',
      '--set-json',
      'c={}',
      '--values=x.yaml',
    ]),
    ['--set', 'a=1', '-f', 'values.yaml', '--set-string=b=2', '-fmore.yaml', '--set-json', 'c={}', '--values=x.yaml'],
  );
});
