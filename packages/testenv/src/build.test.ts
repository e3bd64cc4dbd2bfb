import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stagingModules } from './build.ts';

test('stagingModules reads the ./staging replaces of k8s.io/kubernetes go.mod, single and block form', () => {
  const goMod = [
    'module k8s.io/kubernetes',
    'go 1.26.0',
    'require github.com/x/y v1.0.0',
    'replace (',
    '\tk8s.io/api => ./staging/src/k8s.io/api',
    '\tk8s.io/apimachinery => ./staging/src/k8s.io/apimachinery',
    '\tgithub.com/other/mod => github.com/other/mod v1.2.3',
    ')',
    'replace k8s.io/client-go => ./staging/src/k8s.io/client-go',
  ].join('\n');
  assert.deepEqual(stagingModules(goMod), ['k8s.io/api', 'k8s.io/apimachinery', 'k8s.io/client-go']);
});
