import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fakeGo } from '../test/fake-go.ts';
import { resolveBinaries } from './binaries.ts';
import { binaryCacheDir } from './binary-cache.ts';
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

/** A loopback address where nothing listens: downloads through it fail at once, and nothing leaves the machine. */
async function deadMirror(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return `http://127.0.0.1:${port}`;
}

test('offline with no Go, resolveBinaries fails at once with one message listing every way to get binaries', async () => {
  const cache = await mkdtemp(join(tmpdir(), 'opkit-cache-'));
  const env = {
    OPKIT_CACHE_DIR: cache,
    OPKIT_GO: join(cache, 'no-go-here'),
    PATH: '',
    OPKIT_DOWNLOAD_MIRROR: await deadMirror(),
  };
  const t0 = Date.now();
  await assert.rejects(resolveBinaries({ env, log: () => {} }), (err) => {
    assert.ok(isTestenvError(err, 'BinariesMissing'));
    for (const part of [
      'etcd',
      'kube-apiserver',
      'kwok',
      'downloading etcd failed',
      'ECONNREFUSED',
      'OPKIT_DOWNLOAD_MIRROR',
      'OPKIT_TESTENV_BINARIES',
      'KUBEBUILDER_ASSETS',
      'OPKIT_GO',
    ]) {
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
  const env = {
    OPKIT_CACHE_DIR: join(root, 'cache'),
    OPKIT_GO: join(root, 'none'),
    KUBEBUILDER_ASSETS: assets,
    OPKIT_TESTENV_SOURCE: 'go',
  };
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

test('a cache with manifest.json but a missing binary is not trusted: with no Go, the error names what is missing', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-damaged-'));
  const env = {
    OPKIT_CACHE_DIR: join(root, 'cache'),
    OPKIT_GO: join(root, 'none'),
    PATH: '',
    OPKIT_TESTENV_SOURCE: 'go',
  };
  const cacheDir = binaryCacheDir(env);
  for (const gone of ['kube-scheduler', 'kwok']) {
    await rm(cacheDir, { recursive: true, force: true });
    await fakeBinaries(cacheDir, ALL);
    await writeFile(join(cacheDir, 'manifest.json'), '{}');
    await rm(join(cacheDir, gone));
    await assert.rejects(resolveBinaries({ env, log: () => {} }), (err) => {
      assert.ok(isTestenvError(err, 'BinariesMissing'), String(err));
      assert.match(err.message, new RegExp(`holds manifest\\.json but lacks ${gone} \\(missing\\)`));
      assert.match(err.message, /npx opkit env fetch/);
      return true;
    });
  }
  await chmod(join(cacheDir, 'kube-scheduler'), 0o644);
  await assert.rejects(resolveBinaries({ env, log: () => {} }), /kube-scheduler \(not an executable file\)/);
  await rm(root, { recursive: true, force: true });
});

test('a damaged cache is repaired with Go: only the missing or resized binaries are rebuilt', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-repair-'));
  const { go, built } = await fakeGo(root);
  const env = { OPKIT_CACHE_DIR: join(root, 'cache'), OPKIT_GO: go, PATH: '', OPKIT_TESTENV_SOURCE: 'go' };
  const cacheDir = binaryCacheDir(env);
  await fakeBinaries(cacheDir, ALL);
  await writeFile(join(cacheDir, 'manifest.json'), JSON.stringify({ kubernetes: 'v', componentSeconds: { etcd: 1 } }));
  await rm(join(cacheDir, 'kube-scheduler'));
  const lines: string[] = [];
  const paths = await resolveBinaries({ env, log: (l) => lines.push(l) });
  assert.equal(paths['kube-scheduler'], join(cacheDir, 'kube-scheduler'));
  assert.deepEqual(await built(), ['kube-scheduler']);
  assert.ok(
    lines.some((l) => /lacks kube-scheduler \(missing\); fetching it again/.test(l)),
    lines.join('\n'),
  );
  const manifest = JSON.parse(await readFile(join(cacheDir, 'manifest.json'), 'utf8'));
  assert.equal(manifest.kubernetes, 'v', 'the rest of the manifest is kept');
  assert.equal(manifest.files.etcd, '#!/bin/sh\n'.length);
  // a binary replaced by one of another size (say, copied from another version set) is rebuilt too
  await writeFile(join(cacheDir, 'etcd'), '#!/bin/sh\n# some other etcd\n');
  await resolveBinaries({ env, log: () => {} });
  assert.deepEqual(await built(), ['kube-scheduler', 'etcd']);
  await rm(root, { recursive: true, force: true });
});
