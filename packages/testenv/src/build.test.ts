import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildProgress, stagingModules } from './build.ts';
import { KWOK_STAGES, KWOK_STAGES_VERSION } from './kwok-stages.ts';
import { KWOK_VERSION } from './versions.ts';

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

test('buildProgress: packages compiled of the total, with the time left at the rate so far', () => {
  assert.equal(buildProgress(0, 2000, 5), '0 of 2000 packages compiled (0%), 5 s');
  assert.equal(buildProgress(500, 2000, 60), '500 of 2000 packages compiled (25%), 60 s, about 3 min left');
  assert.equal(buildProgress(1900, 2000, 190), '1900 of 2000 packages compiled (95%), 190 s, about 10 s left');
  assert.equal(buildProgress(2100, 2000, 200), '2000 of 2000 packages compiled (100%), 200 s');
});

test('the kwok stages are those of the pinned kwok version', () => {
  assert.equal(
    KWOK_STAGES_VERSION,
    KWOK_VERSION,
    'regenerate kwok-stages.ts from the kwok module at the pinned version',
  );
  for (const stage of ['node-initialize', 'node-heartbeat-with-lease', 'pod-ready', 'pod-complete', 'pod-delete']) {
    assert.match(KWOK_STAGES, new RegExp(`name: ${stage}\\n`));
  }
});
