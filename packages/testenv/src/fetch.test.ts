/*
 * downloadIntoCache's per-component failures, against servers on 127.0.0.1 only: a scripted mirror where each
 * component fails in its own way, a mirror port where nothing listens, and the upstream URLs sent through a proxy port
 * where nothing listens (so no name is resolved and nothing leaves the machine). Every failure must name the URL of
 * its own component, never one of another component.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { downloadIntoCache } from './fetch.ts';
import { mirrored, mirrorPath, type ReleasePlatform, releaseArtifact } from './release.ts';
import { COMPONENT_NAMES, type ComponentName } from './versions.ts';

const platform: ReleasePlatform = { os: 'linux', arch: 'amd64' };
const FAST = { attempts: 2, stallMs: 2_000, backoffMs: 1 };

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

/** A loopback URL where nothing listens: connecting is refused at once. */
async function deadPort(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  await new Promise<void>((done) => server.close(() => done()));
  return url;
}

/** Every URL a component's download may request (checksum file and artifact), as `base` serves it. */
function urlsOf(c: ComponentName, base: string | undefined): string[] {
  const a = releaseArtifact(c, platform);
  return [mirrored(a.checksumUrl, base), mirrored(a.url, base)];
}

/** Asserts that each failure names `own(c)` and no URL of another component. */
function assertOwnUrls(
  failures: Partial<Record<ComponentName, string>>,
  base: string | undefined,
  own: (c: ComponentName) => string,
): void {
  for (const c of COMPONENT_NAMES) {
    const message = failures[c] ?? assert.fail(`${c} did not fail`);
    assert.ok(message.includes(own(c)), `${c}: "${message}" does not name ${own(c)}`);
    for (const other of COMPONENT_NAMES.filter((o) => o !== c)) {
      for (const url of urlsOf(other, base)) {
        // kube-apiserver's URL is a prefix of kube-apiserver.sha256, never of another component's URL
        const named = message.split(/\s+/).some((word) => word.replace(/[:;,]+$/, '') === url);
        assert.ok(!named, `${c}: "${message}" names ${other}'s ${url}`);
      }
    }
  }
}

async function inTempCache<T>(run: (cacheDir: string) => Promise<T>): Promise<T> {
  const root = await mkdtemp(join(tmpdir(), 'opkit-fetch-'));
  try {
    return await run(join(root, 'bin', 'set'));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

test('a mirror where nothing listens: each component names its own checksum URL, not the first failure', async () => {
  const base = await deadPort();
  const result = await inTempCache((cacheDir) =>
    downloadIntoCache({
      cacheDir,
      components: COMPONENT_NAMES,
      platform,
      env: { OPKIT_DOWNLOAD_MIRROR: base },
      log: () => {},
      settings: FAST,
    }),
  );
  assert.deepEqual(result.downloaded, {});
  assertOwnUrls(result.failures, base, (c) => mirrored(releaseArtifact(c, platform).checksumUrl, base));
  for (const c of COMPONENT_NAMES) assert.match(result.failures[c] ?? '', /ECONNREFUSED/, c);
});

test('offline upstream (a proxy where nothing listens): each line names its own dl.k8s.io or github.com URL', async () => {
  const proxy = await deadPort();
  const result = await inTempCache((cacheDir) =>
    downloadIntoCache({
      cacheDir,
      components: COMPONENT_NAMES,
      platform,
      env: { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, NO_PROXY: '' },
      log: () => {},
      settings: FAST,
    }),
  );
  assert.deepEqual(result.downloaded, {});
  assertOwnUrls(result.failures, undefined, (c) => releaseArtifact(c, platform).checksumUrl);
});

test('a mirror where each component fails differently: each failure names its own URL and its own cause', async () => {
  const digest = (body: string) => createHash('sha256').update(body).digest('hex');
  const artifact = (c: ComponentName) => releaseArtifact(c, platform);
  const path = (url: string) => `/${mirrorPath(url)}`;
  const kubectlBody = 'kubectl stand-in';
  const etcdBody = 'not a tar.gz';
  const kwokBody = 'kwok stand-in';
  const served = new Map<string, (res: ServerResponse) => void>([
    [path(artifact('kube-apiserver').checksumUrl), (res) => res.writeHead(404).end()],
    [path(artifact('kube-controller-manager').checksumUrl), (res) => res.writeHead(503).end()],
    [path(artifact('kube-scheduler').checksumUrl), (res) => res.writeHead(200).end('no digest here\n')],
    [path(artifact('kubectl').checksumUrl), (res) => res.writeHead(200).end(`${digest(kubectlBody)}\n`)],
    [path(artifact('kubectl').url), (res) => res.writeHead(403).end()],
    [
      path(artifact('etcd').checksumUrl),
      (res) => res.writeHead(200).end(`${digest(etcdBody)}  ${artifact('etcd').fileName}\n`),
    ],
    [path(artifact('etcd').url), (res) => res.writeHead(200).end(etcdBody)],
    [path(artifact('kwok').checksumUrl), (res) => res.writeHead(200).end(`${digest(kwokBody)}\n`)],
    [path(artifact('kwok').url), (res) => res.socket?.destroy()],
  ]);
  const server = createServer((req, res) => {
    const answer = served.get(new URL(req.url ?? '/', 'http://mirror').pathname);
    if (answer) answer(res);
    else res.writeHead(500).end();
  });
  const base = await listen(server);
  try {
    const result = await inTempCache((cacheDir) =>
      downloadIntoCache({
        cacheDir,
        components: COMPONENT_NAMES,
        platform,
        env: { OPKIT_DOWNLOAD_MIRROR: base },
        log: () => {},
        settings: FAST,
      }),
    );
    assert.deepEqual(result.downloaded, {});
    const checksum = (c: ComponentName) => mirrored(artifact(c).checksumUrl, base);
    const file = (c: ComponentName) => mirrored(artifact(c).url, base);
    const own: Record<ComponentName, string> = {
      'kube-apiserver': checksum('kube-apiserver'),
      'kube-controller-manager': checksum('kube-controller-manager'),
      'kube-scheduler': checksum('kube-scheduler'),
      kubectl: file('kubectl'),
      etcd: file('etcd'),
      kwok: file('kwok'),
    };
    assertOwnUrls(result.failures, base, (c) => own[c]);
    assert.match(result.failures['kube-apiserver'] ?? '', /answered HTTP 404/);
    assert.match(result.failures['kube-controller-manager'] ?? '', /HTTP 503.*gave up after 2 attempts/);
    assert.match(result.failures['kube-scheduler'] ?? '', /lists no sha256 digest of kube-scheduler/);
    assert.match(result.failures.kubectl ?? '', /answered HTTP 403/);
    assert.match(result.failures.etcd ?? '', /not a readable \.tar\.gz archive/);
    assert.match(result.failures.kwok ?? '', /gave up after 2 attempts/);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((done) => server.close(() => done()));
  }
});
