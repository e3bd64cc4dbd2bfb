import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { binaryCacheDir, resolveBinaries } from './binaries.ts';
import { isTestenvError } from './errors.ts';

async function fakeBinaries(dir: string, names: readonly string[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const n of names) {
    await writeFile(join(dir, n), '#!/bin/sh\n');
    await chmod(join(dir, n), 0o755);
  }
  if (names.includes('kwok')) await writeFile(join(dir, 'kwok-stages.yaml'), '');
}

const ALL = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'kubectl'];

test('with no binaries and no Go, resolveBinaries fails at once naming what is missing and how to provide it', async () => {
  const cache = await mkdtemp(join(tmpdir(), 'opkit-cache-'));
  const env = { OPKIT_CACHE_DIR: cache, OPKIT_GO: join(cache, 'no-go-here'), PATH: '' };
  const t0 = Date.now();
  await assert.rejects(resolveBinaries({ env, log: () => {} }), (err) => {
    assert.ok(isTestenvError(err, 'BinariesMissing'));
    for (const part of ['etcd', 'kube-apiserver', 'kwok', 'OPKIT_TESTENV_BINARIES', 'KUBEBUILDER_ASSETS', 'OPKIT_GO']) {
      assert.ok(err.message.includes(part), `message mentions ${part}: ${err.message}`);
    }
    return true;
  });
  assert.ok(Date.now() - t0 < 2_000, 'fails at once');
  await rm(cache, { recursive: true, force: true });
});

test('an explicit binary directory must hold every required component', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-bin-'));
  await fakeBinaries(dir, ['etcd', 'kube-apiserver']);
  await assert.rejects(
    resolveBinaries({ binaryDir: dir, log: () => {} }),
    (err) =>
      isTestenvError(err, 'BinariesMissing') && /lacks kube-controller-manager, kube-scheduler, kwok/.test(err.message),
  );
  await fakeBinaries(dir, ALL);
  const paths = await resolveBinaries({ binaryDir: dir, log: () => {} });
  assert.equal(paths.kwok, join(dir, 'kwok'));
  assert.equal(paths.kubectl, join(dir, 'kubectl'));
  await rm(dir, { recursive: true, force: true });
});

test('KUBEBUILDER_ASSETS provides what it holds; the cache provides the rest; an incomplete cache is not used', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-res-'));
  const assets = join(root, 'assets');
  await fakeBinaries(assets, ['etcd', 'kube-apiserver', 'kubectl']);
  const env = { OPKIT_CACHE_DIR: join(root, 'cache'), OPKIT_GO: join(root, 'none'), KUBEBUILDER_ASSETS: assets };
  const cacheDir = binaryCacheDir(env);
  await fakeBinaries(cacheDir, ALL);
  // binaries without manifest.json: an interrupted build; never used
  await assert.rejects(resolveBinaries({ env, log: () => {} }), (err) => isTestenvError(err, 'BinariesMissing'));
  await writeFile(join(cacheDir, 'manifest.json'), '{}');
  const paths = await resolveBinaries({ env, log: () => {} });
  assert.equal(paths.etcd, join(assets, 'etcd'));
  assert.equal(paths['kube-apiserver'], join(assets, 'kube-apiserver'));
  assert.equal(paths['kube-scheduler'], join(cacheDir, 'kube-scheduler'));
  assert.equal(paths.kwok, join(cacheDir, 'kwok'));
  await rm(root, { recursive: true, force: true });
});
