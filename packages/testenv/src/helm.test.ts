import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fakeGo } from '../test/fake-go.ts';
import { helmCacheDir, resolveHelm } from './helm.ts';

test('resolveHelm builds the pinned helm once into the cache, then uses the cache', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-helm-'));
  try {
    const { go, built } = await fakeGo(root);
    const env = { OPKIT_CACHE_DIR: join(root, 'cache'), OPKIT_GO: go, PATH: '' };
    const lines: string[] = [];
    const first = await resolveHelm({ env, pinned: true, log: (l) => lines.push(l) });
    assert.equal(first, join(helmCacheDir(env), 'helm'));
    assert.deepEqual(await built(), ['helm']);
    assert.ok(lines.some((l) => /building helm v3\.22\.0 from Go modules/.test(l)));
    assert.equal(await resolveHelm({ env, pinned: true, log: () => {} }), first);
    assert.deepEqual(await built(), ['helm'], 'built once');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('resolveHelm prefers OPKIT_HELM, then helm on the PATH unless pinned', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-helm-'));
  try {
    const onPath = join(root, 'helm');
    await writeFile(onPath, '#!/bin/sh\n');
    await chmod(onPath, 0o755);
    const env = { OPKIT_CACHE_DIR: join(root, 'cache'), OPKIT_GO: join(root, 'no-go'), PATH: root };
    assert.equal(await resolveHelm({ env }), onPath);
    assert.equal(await resolveHelm({ env: { ...env, OPKIT_HELM: onPath, PATH: '' } }), onPath);
    await assert.rejects(resolveHelm({ env: { ...env, OPKIT_HELM: join(root, 'nope') } }), {
      code: 'BinariesMissing',
      message: new RegExp(`${join(root, 'nope')} \\(from OPKIT_HELM\\) is not an executable file`),
    });
    await assert.rejects(resolveHelm({ env, pinned: true }), {
      code: 'BinariesMissing',
      message: /no helm: none in .*helm-v3\.22\.0, and no Go to build helm\.sh\/helm\/v3 v3\.22\.0 with — install helm/,
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
