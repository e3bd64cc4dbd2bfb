/*
 * Downloads of the control-plane binaries, against a mirror served on 127.0.0.1 through OPKIT_DOWNLOAD_MIRROR: the
 * upstream URL layout of release.ts (dl.k8s.io/release/<v>/bin/linux/<arch>/<name> + .sha256, etcd's GitHub release
 * archive + SHA256SUMS, kwok's GitHub release binary; sources cited in src/release.test.ts), written by writeMirror.
 * No test contacts a release host: every environment sets OPKIT_DOWNLOAD_MIRROR to a loopback server.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { resolveBinaries } from '../src/binaries.ts';
import { binaryCacheDir } from '../src/binary-cache.ts';
import { isTestenvError } from '../src/errors.ts';
import { start } from '../src/index.ts';
import { writeMirror } from '../src/mirror.ts';
import { mirrorPath, releaseArtifact, releasePlatform } from '../src/release.ts';
import { type ComponentName, KWOK_VERSION } from '../src/versions.ts';
import { fakeGo } from './fake-go.ts';
import {
  type MirrorServer,
  serveMirror,
  standInMirror,
  standIns,
  startProxy,
  upstreamMirror,
} from './fixtures/mirror.ts';
import { quiet } from './helpers.ts';

const platform = releasePlatform() ?? assert.fail('these tests need linux amd64 or arm64');
const FAST = { attempts: 2, stallMs: 500, backoffMs: 20 };

/** The mirror path of a component's artifact or checksum file. */
const artifactPath = (c: ComponentName) => mirrorPath(releaseArtifact(c, platform).url);
const checksumPath = (c: ComponentName) =>
  mirrorPath(releaseArtifact(c, platform).checksumUrl ?? assert.fail(`${c} publishes no checksum file`));
/** The mirror path of the GitHub release answer listing a component's digest. */
const releaseAnswerPath = (c: ComponentName) =>
  mirrorPath(releaseArtifact(c, platform).github?.apiUrl ?? assert.fail(`${c} is not released on GitHub`));

async function fixture(prefix: string): Promise<{ root: string; mirror: MirrorServer; env: NodeJS.ProcessEnv }> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  await standInMirror(join(root, 'mirror'));
  const mirror = await serveMirror(join(root, 'mirror'));
  const env = {
    OPKIT_CACHE_DIR: join(root, 'cache'),
    OPKIT_DOWNLOAD_MIRROR: mirror.base,
    OPKIT_GO: join(root, 'no-go'),
    PATH: '',
  };
  return { root, mirror, env };
}

/** What the cache directory and its siblings hold (staging directories and lock files included). */
async function cacheListing(env: NodeJS.ProcessEnv): Promise<string[]> {
  const dir = binaryCacheDir(env);
  const siblings = await readdir(dirname(dir)).catch(() => []);
  const inside = await readdir(dir).catch(() => []);
  return [...siblings.filter((n) => !n.endsWith(dir.slice(dirname(dir).length + 1))), ...inside].sort();
}

test('first start through a mirror: every binary downloaded and verified, then a real environment runs', async (t) => {
  const real = await resolveBinaries({ log: quiet }); // the machine's binaries (cache or build): the fixture
  const root = await mkdtemp(join(tmpdir(), 'opkit-dl-happy-'));
  const mirror = await serveMirror(join(root, 'mirror'));
  try {
    await writeMirror(join(root, 'mirror'), real, platform);
    const env = { OPKIT_CACHE_DIR: join(root, 'cache'), OPKIT_DOWNLOAD_MIRROR: mirror.base, OPKIT_GO: join(root, 'x') };
    const t0 = performance.now();
    const lines: string[] = [];
    const paths = await resolveBinaries({ env, log: (l) => lines.push(l) });
    const fetched = (performance.now() - t0) / 1000;
    const cacheDir = binaryCacheDir(env);
    assert.equal(paths['kube-apiserver'], join(cacheDir, 'kube-apiserver'));
    assert.ok(!lines.some((l) => /building/.test(l)), lines.join('\n'));
    const manifest = JSON.parse(await readFile(join(cacheDir, 'manifest.json'), 'utf8'));
    assert.equal(manifest.sources.etcd, releaseArtifact('etcd', platform).url);
    assert.equal(manifest.sources.kwok, releaseArtifact('kwok', platform).url);
    assert.match(manifest.sha256['kube-apiserver'], /^[0-9a-f]{64}$/);
    assert.equal(manifest.goVersion, undefined, 'nothing was built');
    const env2 = await start({ binaryDir: cacheDir, nodes: 1, log: quiet });
    try {
      const node = await env2.api.must<{ status: { conditions: { type: string; status: string }[] } }>({
        path: '/api/v1/nodes/kwok-node-0',
      });
      assert.ok(node.status.conditions.some((c) => c.type === 'Ready' && c.status === 'True'));
    } finally {
      await env2.stop();
    }
    const total = (performance.now() - t0) / 1000;
    t.diagnostic(
      `fetched through the mirror in ${fetched.toFixed(1)} s; first environment ready after ${total.toFixed(1)} s`,
    );
    for (const c of Object.keys(manifest.files)) assert.equal(mirror.hits.get(artifactPath(c as ComponentName)), 1);
  } finally {
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('no Go, and a mirror holding only what upstream publishes: kwok is verified by its GitHub release digest', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-dl-upstream-'));
  const { sha256: digests } = await upstreamMirror(join(root, 'mirror'), await standIns(join(root, 'stand-ins')));
  const mirror = await serveMirror(join(root, 'mirror'), { githubRedirects: true });
  try {
    const env = {
      OPKIT_CACHE_DIR: join(root, 'cache'),
      OPKIT_DOWNLOAD_MIRROR: mirror.base,
      OPKIT_GO: join(root, 'no-go'),
      PATH: '',
      GITHUB_TOKEN: 'ghp_never-sent-to-a-mirror',
    };
    const lines: string[] = [];
    const paths = await resolveBinaries({ env, log: (l) => lines.push(l), download: FAST });
    assert.equal(paths.kwok, join(binaryCacheDir(env), 'kwok'), lines.join('\n'));
    const manifest = JSON.parse(await readFile(join(binaryCacheDir(env), 'manifest.json'), 'utf8'));
    assert.equal(manifest.sources.kwok, releaseArtifact('kwok', platform).url);
    assert.deepEqual(manifest.sha256, digests, 'each binary carries the digest upstream published for it');
    assert.equal(manifest.goVersion, undefined, 'nothing was built');
    const kwokApi = `api.github.com/repos/kubernetes-sigs/kwok/releases/tags/${KWOK_VERSION}`;
    assert.equal(mirror.hits.get(kwokApi), 1, 'the release answer is read once');
    assert.equal(mirror.hits.get(artifactPath('kwok')), 1);
    assert.ok(
      mirror.requests.some((r) => r.path.startsWith('release-assets.githubusercontent.com/')),
      "GitHub's redirect to the asset host was followed",
    );
    assert.ok(
      !mirror.requests.some(
        (r) => r.path.endsWith('kwok-linux-amd64.sha256') || r.path.endsWith('kwok-linux-arm64.sha256'),
      ),
    );
    assert.ok(
      mirror.requests.every((r) => r.headers.authorization === undefined),
      'GITHUB_TOKEN is never sent to a mirror',
    );
  } finally {
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('a corrupted file and a wrong checksum are refused, naming the URL and both digests, with nothing cached', async () => {
  const { root, mirror, env } = await fixture('opkit-dl-bad-');
  try {
    mirror.faults.set(artifactPath('kube-apiserver'), 'corrupt');
    await assert.rejects(resolveBinaries({ env, log: quiet, download: FAST }), (err) => {
      assert.ok(isTestenvError(err, 'ChecksumMismatch'), String(err));
      assert.ok(err.message.includes(`${mirror.base}/${artifactPath('kube-apiserver')}`), err.message);
      assert.equal(err.message.match(/\b[0-9a-f]{64}\b/g)?.length, 2, err.message);
      assert.match(err.message, /nothing was cached/);
      return true;
    });
    assert.deepEqual(await cacheListing(env), [], 'nothing in the cache, no staging left');
    assert.equal(mirror.hits.get(artifactPath('kube-apiserver')), 1, 'a mismatch is not retried');

    mirror.faults.clear();
    await writeFile(join(root, 'mirror', checksumPath('kube-scheduler')), `${'0'.repeat(64)}\n`);
    await assert.rejects(resolveBinaries({ env, log: quiet, download: FAST }), (err) => {
      assert.ok(isTestenvError(err, 'ChecksumMismatch'), String(err));
      assert.ok(err.message.includes('0'.repeat(64)), err.message);
      assert.ok(err.message.includes(artifactPath('kube-scheduler')), err.message);
      return true;
    });
    assert.deepEqual(await cacheListing(env), []);
  } finally {
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('a truncated and a stalled download are retried, then refused; a 404 is refused at once', async () => {
  const { root, mirror, env } = await fixture('opkit-dl-flaky-');
  try {
    mirror.faults.set(artifactPath('kube-controller-manager'), 'truncate');
    mirror.faults.set(artifactPath('etcd'), 'stall');
    mirror.faults.set(artifactPath('kwok'), 'missing');
    const t0 = performance.now();
    await assert.rejects(resolveBinaries({ env, log: quiet, download: FAST }), (err) => {
      assert.ok(isTestenvError(err, 'BinariesMissing'), String(err));
      assert.match(err.message, /downloading etcd failed: .*stalled: no data for 0.5 s.*gave up after 2 attempts/);
      assert.match(err.message, /downloading kube-controller-manager failed: .*truncated.*gave up after 2 attempts/);
      assert.match(err.message, /downloading kwok failed: .*kwok-linux-\w+ answered HTTP 404/);
      assert.match(err.message, /OPKIT_DOWNLOAD_MIRROR/);
      return true;
    });
    assert.ok(performance.now() - t0 < 20_000, 'bounded by the stall timeout');
    assert.equal(mirror.hits.get(artifactPath('kube-controller-manager')), 2);
    assert.equal(mirror.hits.get(artifactPath('etcd')), 2);
    assert.equal(mirror.hits.get(artifactPath('kwok')), 1, 'a 404 is not retried');
    const cached = await readdir(binaryCacheDir(env));
    for (const refused of ['etcd', 'kube-controller-manager', 'kwok']) assert.ok(!cached.includes(refused), refused);
    assert.ok(cached.includes('kube-apiserver'), 'what was verified is kept for the next try');
    assert.ok(!cached.some((n) => /partial|download/.test(n)), cached.join(' '));

    mirror.faults.clear(); // the next run fetches only what is missing
    const paths = await resolveBinaries({ env, log: quiet, download: FAST });
    assert.equal(paths.etcd, join(binaryCacheDir(env), 'etcd'));
    assert.equal(mirror.hits.get(artifactPath('kube-apiserver')), 1);
  } finally {
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('two processes fetching at once: one downloads, the other waits for it', async () => {
  const { root, mirror, env } = await fixture('opkit-dl-two-');
  try {
    mirror.faults.set(artifactPath('kube-apiserver'), 'slow');
    const child = fileURLToPath(new URL('./fixtures/fetch-binaries.ts', import.meta.url));
    const run = () =>
      new Promise<{ code: number | null; out: string }>((done) => {
        const p = spawn(process.execPath, [child], { env: { ...process.env, ...env } });
        let out = '';
        p.stdout.on('data', (c: Buffer) => (out += c));
        p.stderr.on('data', (c: Buffer) => (out += c));
        p.on('close', (code) => done({ code, out }));
      });
    const [a, b] = await Promise.all([run(), run()]);
    assert.equal(a.code, 0, a.out);
    assert.equal(b.code, 0, b.out);
    assert.equal([a, b].filter((r) => /waiting for it/.test(r.out)).length, 1, `${a.out}\n---\n${b.out}`);
    assert.equal([a, b].filter((r) => /downloaded and verified/.test(r.out)).length, 1);
    for (const c of ['etcd', 'kube-apiserver', 'kwok'] as const) assert.equal(mirror.hits.get(artifactPath(c)), 1, c);
  } finally {
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('HTTP_PROXY is honoured (its use asserted at a loopback proxy), NO_PROXY bypasses it', async () => {
  const { root, mirror, env } = await fixture('opkit-dl-proxy-');
  const proxy = await startProxy();
  try {
    const host = new URL(mirror.base).host;
    await resolveBinaries({ env: { ...env, HTTP_PROXY: proxy.url, NO_PROXY: '' }, log: quiet, download: FAST });
    // one CONNECT tunnel (or forwarded request) per connection; kept-alive connections carry several files
    assert.ok(proxy.carried.length >= 1, 'the proxy carried the downloads');
    assert.ok(
      proxy.carried.every((h) => h === host),
      proxy.carried.join(', '),
    );
    assert.equal(mirror.hits.get(artifactPath('kube-apiserver')), 1);
    const before = proxy.carried.length;
    const direct = { ...env, OPKIT_CACHE_DIR: join(root, 'cache2'), HTTP_PROXY: proxy.url, NO_PROXY: '127.0.0.1' };
    await resolveBinaries({ env: direct, log: quiet, download: FAST });
    assert.equal(proxy.carried.length, before, 'NO_PROXY names the mirror: no request through the proxy');
  } finally {
    await proxy.close();
    await mirror.close();
    await rm(root, { recursive: true, force: true });
  }
});

test('with Go present, what cannot be downloaded is built from Go: kwok without a digest, or all when offline', async () => {
  const { root, mirror, env } = await fixture('opkit-dl-go-');
  try {
    const { go, built } = await fakeGo(root);
    await rm(join(root, 'mirror', releaseAnswerPath('kwok'))); // a mirror without kwok's release answer
    const lines: string[] = [];
    const paths = await resolveBinaries({ env: { ...env, OPKIT_GO: go }, log: (l) => lines.push(l), download: FAST });
    assert.deepEqual(await built(), ['kwok']);
    assert.ok(
      lines.some((l) =>
        /could not download kwok: .*api\.github\.com\/repos\/kubernetes-sigs\/kwok\/releases\/tags\/v[\d.]+ answered HTTP 404/.test(
          l,
        ),
      ),
      lines.join('\n'),
    );
    const manifest = JSON.parse(await readFile(join(binaryCacheDir(env), 'manifest.json'), 'utf8'));
    assert.equal(manifest.sources.kwok, 'go');
    assert.equal(manifest.sources.etcd, releaseArtifact('etcd', platform).url);
    assert.equal(paths.kwokStages, join(binaryCacheDir(env), 'kwok-stages.yaml'));

    await mirror.close(); // offline: every download fails at once, everything is built
    const offline = { ...env, OPKIT_GO: go, OPKIT_CACHE_DIR: join(root, 'cache-offline') };
    await resolveBinaries({ env: offline, log: quiet, download: FAST });
    assert.deepEqual((await built()).slice(1).sort(), [
      'etcd',
      'kube-apiserver',
      'kube-controller-manager',
      'kube-scheduler',
      'kubectl',
      'kwok',
    ]);
  } finally {
    await mirror.close().catch(() => {});
    await rm(root, { recursive: true, force: true });
  }
});
