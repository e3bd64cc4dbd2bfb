/*
 * downloadIntoCache against servers on 127.0.0.1 only: a scripted mirror where each component fails in its own way, a
 * mirror port where nothing listens, and the upstream URLs sent through a proxy port where nothing listens (so no name
 * is resolved and nothing leaves the machine). Every failure must name the URL of its own component, never one of
 * another component. Then GitHub's releases API as the digest of kwok (and the second check of etcd): its answer's
 * shape is that of GitHub's REST API "Get a release by tag name" (`assets[].name`, `assets[].digest` =
 * `sha256:<hex>`, null for assets uploaded before GitHub computed digests), its rate-limit answer that of "Rate limits
 * for the REST API" (403 with `x-ratelimit-remaining: 0` and `x-ratelimit-reset`).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { c as createTar } from 'tar';
import { rateLimited } from './download.ts';
import { isTestenvError } from './errors.ts';
import { downloadIntoCache, rateLimitAdvice } from './fetch.ts';
import { githubApiHeaders, mirrored, mirrorPath, type ReleasePlatform, releaseArtifact } from './release.ts';
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

/** Every URL a component's download may request (checksum file, release answer, artifact), as `base` serves it. */
function urlsOf(c: ComponentName, base: string | undefined): string[] {
  const a = releaseArtifact(c, platform);
  return [a.checksumUrl, a.github?.apiUrl, a.url].flatMap((u) => (u ? [mirrored(u, base)] : []));
}

/** The first URL a component's download requests: its checksum file, else its release's API answer. */
function firstUrl(c: ComponentName): string {
  const a = releaseArtifact(c, platform);
  return a.checksumUrl ?? a.github?.apiUrl ?? assert.fail(`${c} has no digest source`);
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

test('a mirror where nothing listens: each component names its own first URL, not the first failure', async () => {
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
  assertOwnUrls(result.failures, base, (c) => mirrored(firstUrl(c), base));
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
  assertOwnUrls(result.failures, undefined, firstUrl);
});

test('a mirror where each component fails differently: each failure names its own URL and its own cause', async () => {
  const digest = (body: string) => createHash('sha256').update(body).digest('hex');
  const artifact = (c: ComponentName) => releaseArtifact(c, platform);
  const path = (url: string | undefined) => `/${mirrorPath(url ?? assert.fail('no URL'))}`;
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
    [
      path(artifact('kwok').github?.apiUrl),
      (res) =>
        res.writeHead(200).end(release([{ name: artifact('kwok').fileName, digest: `sha256:${digest(kwokBody)}` }])),
    ],
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
    const checksum = (c: ComponentName) => mirrored(firstUrl(c), base);
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

/** GitHub's "Get a release by tag name" answer for `assets` (the documented fields clients read, and a few more). */
function release(assets: readonly { name: string; digest: string | null; size?: number }[]): string {
  return JSON.stringify({
    url: 'https://api.github.com/repos/kubernetes-sigs/kwok/releases/1',
    html_url: 'https://github.com/kubernetes-sigs/kwok/releases/tag/v0.8.0',
    id: 1,
    tag_name: 'v0.8.0',
    name: 'v0.8.0',
    draft: false,
    prerelease: false,
    assets: assets.map((a, i) => ({
      url: `https://api.github.com/repos/kubernetes-sigs/kwok/releases/assets/${i + 10}`,
      id: i + 10,
      name: a.name,
      label: '',
      content_type: 'application/octet-stream',
      state: 'uploaded',
      size: a.size ?? 1,
      digest: a.digest,
      download_count: 7,
      browser_download_url: `https://github.com/kubernetes-sigs/kwok/releases/download/v0.8.0/${a.name}`,
    })),
  });
}

const sha256 = (body: string | Buffer) => createHash('sha256').update(body).digest('hex');

interface Scripted {
  readonly base: string;
  readonly hits: Map<string, number>;
  readonly authorization: (string | undefined)[];
  close(): Promise<void>;
}

/** A mirror answering each path with its scripted answer (500 for any other), counting requests per path. */
async function scripted(answers: Map<string, (res: ServerResponse, base: string) => void>): Promise<Scripted> {
  const hits = new Map<string, number>();
  const authorization: (string | undefined)[] = [];
  let base = '';
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://mirror').pathname;
    hits.set(path, (hits.get(path) ?? 0) + 1);
    authorization.push(req.headers.authorization);
    const answer = answers.get(path);
    if (answer) answer(res, base);
    else res.writeHead(500).end();
  });
  base = await listen(server);
  return {
    base,
    hits,
    authorization,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}

const kwok = releaseArtifact('kwok', platform);
const kwokApiPath = `/${mirrorPath(kwok.github?.apiUrl ?? assert.fail('kwok is on GitHub'))}`;
const kwokPath = `/${mirrorPath(kwok.url)}`;

test("kwok: checked against the digest GitHub's releases API lists, through GitHub's redirect to the asset host", async () => {
  const body = 'the kwok binary';
  const signed = '/release-assets.githubusercontent.com/github-production-release-asset/1/abc';
  for (const [label, listed] of [
    ['matching', sha256(body)],
    ['other', sha256('another build')],
  ] as const) {
    const server = await scripted(
      new Map([
        [
          kwokApiPath,
          (res) =>
            res.writeHead(200).end(
              release([
                { name: 'kwok-darwin-arm64', digest: `sha256:${'e'.repeat(64)}` },
                { name: kwok.fileName, digest: `sha256:${listed.toUpperCase()}` },
              ]),
            ),
        ],
        [kwokPath, (res, base) => res.writeHead(302, { location: `${base}${signed}?sp=r&sig=x` }).end()],
        [signed, (res) => res.writeHead(200).end(body)],
      ]),
    );
    try {
      const run = inTempCache((cacheDir) =>
        downloadIntoCache({
          cacheDir,
          components: ['kwok'],
          platform,
          env: { OPKIT_DOWNLOAD_MIRROR: server.base, GITHUB_TOKEN: 'ghp_secret' },
          log: () => {},
          settings: FAST,
        }),
      );
      if (label === 'matching') {
        const result = await run;
        assert.deepEqual(result.failures, {});
        assert.deepEqual(result.downloaded.kwok, { url: kwok.url, sha256: sha256(body) });
      } else {
        await assert.rejects(run, (err) => {
          assert.ok(isTestenvError(err, 'ChecksumMismatch'), String(err));
          assert.ok(
            err.message.includes(`the digest GitHub's releases API lists for it (${server.base}${kwokApiPath})`),
            err.message,
          );
          assert.ok(err.message.includes(listed) && err.message.includes(sha256(body)), err.message);
          return true;
        });
      }
      assert.equal(server.hits.get(kwokApiPath), 1);
      assert.equal(server.hits.get(signed), 1, 'the redirect was followed');
      assert.ok(
        server.authorization.every((a) => a === undefined),
        'GITHUB_TOKEN never goes to a mirror',
      );
    } finally {
      await server.close();
    }
  }
});

test('kwok: an answer without the asset, without a digest, with a non-SHA-256 digest, or not JSON is named', async () => {
  const cases: [string, string, RegExp][] = [
    [
      'no asset',
      release([{ name: 'kwokctl-linux-amd64', digest: `sha256:${'a'.repeat(64)}` }]),
      /lists no asset named kwok-linux-\w+ \(it lists only kwokctl-linux-amd64\)/,
    ],
    ['null digest', release([{ name: kwok.fileName, digest: null }]), /lists kwok-linux-\w+ without a digest/],
    [
      'sha512',
      release([{ name: kwok.fileName, digest: `sha512:${'b'.repeat(128)}` }]),
      /lists kwok-linux-\w+ with the digest "sha512:b+", not a SHA-256 digest/,
    ],
    [
      'short',
      release([{ name: kwok.fileName, digest: 'sha256:abc' }]),
      /with the digest "sha256:abc", not a SHA-256 digest/,
    ],
    ['html', '<html>Not Found</html>', /is not JSON/],
    ['no assets', '{"message":"Not Found"}', /holds no "assets" list/],
  ];
  for (const [label, answer, expected] of cases) {
    const server = await scripted(new Map([[kwokApiPath, (res) => res.writeHead(200).end(answer)]]));
    try {
      const result = await inTempCache((cacheDir) =>
        downloadIntoCache({
          cacheDir,
          components: ['kwok'],
          platform,
          env: { OPKIT_DOWNLOAD_MIRROR: server.base },
          log: () => {},
          settings: FAST,
        }),
      );
      const failure = result.failures.kwok ?? assert.fail(`${label}: kwok did not fail`);
      assert.ok(failure.startsWith(`${server.base}${kwokApiPath} `), `${label}: ${failure}`);
      assert.match(failure, expected, label);
      assert.equal(server.hits.get(kwokPath), undefined, `${label}: nothing unverifiable is downloaded`);
    } finally {
      await server.close();
    }
  }
});

test("GitHub's used-up rate limit is final and says when it resets and what to do", async () => {
  const reset = Math.floor(Date.now() / 1000) + 1500;
  const server = await scripted(
    new Map([
      [
        kwokApiPath,
        (res) =>
          res
            .writeHead(403, {
              'x-ratelimit-limit': '60',
              'x-ratelimit-remaining': '0',
              'x-ratelimit-reset': String(reset),
              'x-ratelimit-resource': 'core',
            })
            .end('{"message":"API rate limit exceeded for 127.0.0.1."}'),
      ],
    ]),
  );
  try {
    const result = await inTempCache((cacheDir) =>
      downloadIntoCache({
        cacheDir,
        components: ['kwok'],
        platform,
        env: { OPKIT_DOWNLOAD_MIRROR: server.base },
        log: () => {},
        settings: FAST,
      }),
    );
    const at = new Date(reset * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    assert.equal(
      result.failures.kwok,
      `${server.base}${kwokApiPath} answered HTTP 403: its rate limit of 60 requests an hour is used up ` +
        `(x-ratelimit-remaining: 0) until ${at}, in 25 min. The mirror answers for api.github.com: ask its operator, or wait until then`,
    );
    assert.equal(server.hits.get(kwokApiPath), 1, 'not retried');
  } finally {
    await server.close();
  }
  assert.match(rateLimitAdvice({}, undefined), /set GITHUB_TOKEN .*api\.github\.com only.*OPKIT_DOWNLOAD_MIRROR/);
  assert.match(rateLimitAdvice({ GITHUB_TOKEN: 'x' }, undefined), /GITHUB_TOKEN is set, and its own limit is used up/);
});

test('rate limits: the primary (x-ratelimit-remaining: 0) and the secondary (retry-after); nothing else', () => {
  const now = Date.UTC(2026, 11, 1, 20, 0, 0);
  const headers = (h: Record<string, string>) => new Headers(h);
  const primary = headers({
    'x-ratelimit-limit': '5000',
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(now / 1000 + 90),
  });
  assert.equal(
    rateLimited(403, primary, now),
    'its rate limit of 5000 requests an hour is used up (x-ratelimit-remaining: 0) until 2026-12-01T20:01:30Z, in 2 min',
  );
  assert.equal(rateLimited(429, primary, now)?.startsWith('its rate limit'), true);
  assert.equal(
    rateLimited(429, headers({ 'retry-after': '60' }), now),
    'its secondary rate limit was hit: retry after 60 s (retry-after)',
  );
  assert.equal(
    rateLimited(403, headers({ 'x-ratelimit-remaining': '12' }), now),
    undefined,
    'a 403 with requests left is another refusal',
  );
  assert.equal(rateLimited(404, primary, now), undefined);
});

test('GITHUB_TOKEN is sent to https://api.github.com only', () => {
  const env = { GITHUB_TOKEN: 'ghp_secret' };
  const api = 'https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v0.8.0';
  assert.equal(githubApiHeaders(api, env).authorization, 'Bearer ghp_secret');
  assert.equal(githubApiHeaders(api, env)['x-github-api-version'], '2022-11-28');
  assert.equal(githubApiHeaders(api, env).accept, 'application/vnd.github+json');
  for (const url of [
    'http://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v0.8.0',
    'https://api.github.com.example.com/repos/x/y/releases/tags/v1',
    'https://mirror.example/api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v0.8.0',
    'https://github.com/kubernetes-sigs/kwok/releases/download/v0.8.0/kwok-linux-amd64',
  ])
    assert.equal(githubApiHeaders(url, env).authorization, undefined, url);
  assert.equal(githubApiHeaders(api, {}).authorization, undefined);
  assert.equal(githubApiHeaders(api, { GITHUB_TOKEN: ' ' }).authorization, undefined);
});

test("etcd: SHA256SUMS and GitHub's releases API must agree; without the API's answer SHA256SUMS alone counts", async () => {
  const etcd = releaseArtifact('etcd', platform);
  const work = await mkdtemp(join(tmpdir(), 'opkit-etcd-'));
  const member = etcd.member ?? assert.fail('etcd is an archive');
  await mkdir(join(work, dirname(member)), { recursive: true });
  await writeFile(join(work, member), '#!/bin/sh\necho etcd\n');
  await createTar({ gzip: true, file: join(work, 'etcd.tar.gz'), cwd: work }, [dirname(member)]);
  const archive = await readFile(join(work, 'etcd.tar.gz'));
  await rm(work, { recursive: true, force: true });
  const sums = `${sha256('other')}  etcd-v3.5.35-darwin-arm64.zip\n${sha256(archive)}  ${etcd.fileName}\n`;
  const apiPath = `/${mirrorPath(etcd.github?.apiUrl ?? assert.fail('etcd is on GitHub'))}`;
  for (const [label, api] of [
    [
      'agree',
      (res: ServerResponse) =>
        res.writeHead(200).end(release([{ name: etcd.fileName, digest: `sha256:${sha256(archive)}` }])),
    ],
    [
      'disagree',
      (res: ServerResponse) =>
        res.writeHead(200).end(release([{ name: etcd.fileName, digest: `sha256:${sha256('x')}` }])),
    ],
    ['no answer', (res: ServerResponse) => res.writeHead(404).end('{"message":"Not Found"}')],
  ] as const) {
    const server = await scripted(
      new Map<string, (res: ServerResponse) => void>([
        [
          `/${mirrorPath(etcd.checksumUrl ?? assert.fail('etcd publishes SHA256SUMS'))}`,
          (res) => res.writeHead(200).end(sums),
        ],
        [apiPath, api],
        [`/${mirrorPath(etcd.url)}`, (res) => res.writeHead(200).end(archive)],
      ]),
    );
    const lines: string[] = [];
    try {
      const run = inTempCache((cacheDir) =>
        downloadIntoCache({
          cacheDir,
          components: ['etcd'],
          platform,
          env: { OPKIT_DOWNLOAD_MIRROR: server.base },
          log: (l) => lines.push(l),
          settings: FAST,
        }),
      );
      if (label === 'disagree') {
        await assert.rejects(run, (err) => {
          assert.ok(isTestenvError(err, 'ChecksumMismatch'), String(err));
          assert.match(
            err.message,
            /SHA256SUMS\) says [0-9a-f]{64}, but GitHub's releases API \(.*\) says [0-9a-f]{64}; nothing was downloaded/,
          );
          return true;
        });
        assert.equal(server.hits.get(`/${mirrorPath(etcd.url)}`), undefined, 'not downloaded');
      } else {
        const result = await run;
        assert.equal(result.downloaded.etcd?.sha256, sha256(archive), `${label}: ${JSON.stringify(result.failures)}`);
        const skipped = lines.some((l) =>
          /^etcd: the second check against GitHub's releases API was skipped \(.*HTTP 404\); the checksum file published beside it \(.*SHA256SUMS\) alone counts$/.test(
            l,
          ),
        );
        assert.equal(skipped, label === 'no answer', lines.join('\n'));
      }
    } finally {
      await server.close();
    }
  }
});
