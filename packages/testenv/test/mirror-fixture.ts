/**
 * @module mirror-fixture
 * Test fixtures for downloads, all on 127.0.0.1: a static server for a mirror directory (the upstream URL layout of
 * `release.ts`) that can corrupt, truncate, stall, delay or refuse chosen files, answers GitHub's release downloads
 * with GitHub's redirect when asked, records request headers and counts requests; a mirror of small stand-in
 * executables written by `writeMirror`; the upstream layout written by hand from the projects' own publications
 * (`upstreamMirror`); and a tiny forward/CONNECT proxy that records what it carried.
 */
import { createHash, randomUUID } from 'node:crypto';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders, request, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { dirname, join } from 'node:path';
import { c as createTar } from 'tar';
import type { BinaryPaths } from '../src/binaries.ts';
import { writeMirror } from '../src/mirror.ts';
import { releasePlatform } from '../src/release.ts';
import { COMPONENT_NAMES, ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION } from '../src/versions.ts';

/** `corrupt`: one byte flipped; `truncate`: half the bytes, then the connection closes; `stall`: headers and a few
 * bytes, then nothing; `slow`: served after 1.5 s; `missing`: 404; `rate-limited`: GitHub's answer once the API's
 * rate limit is used up (403, `x-ratelimit-remaining: 0`, the reset time). */
export type Fault = 'corrupt' | 'truncate' | 'stall' | 'slow' | 'missing' | 'rate-limited';

/** When the fixture's rate limit resets: 20 minutes from now, in epoch seconds (`x-ratelimit-reset`). */
export const RATE_LIMIT_RESET = Math.floor(Date.now() / 1000) + 1200;

export interface MirrorServer {
  /** The value for OPKIT_DOWNLOAD_MIRROR. */
  readonly base: string;
  readonly faults: Map<string, Fault>;
  /** Requests per path (without the leading slash), faulty ones included. */
  readonly hits: Map<string, number>;
  /** The headers of every request, in order. */
  readonly requests: { path: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** A GitHub release download: `github.com/<owner>/<repo>/releases/download/<tag>/<name>`. */
const GITHUB_DOWNLOAD = /^github\.com\/[^/]+\/[^/]+\/releases\/download\/[^/]+\/[^/]+$/;

/**
 * Serves `root` as `<base>/HOST/PATH`. With `githubRedirects`, a GitHub release download answers as github.com does:
 * 302 to a signed, expiring URL on release-assets.githubusercontent.com (here `<base>/release-assets…`), which serves
 * the file.
 */
export async function serveMirror(root: string, options: { githubRedirects?: boolean } = {}): Promise<MirrorServer> {
  const faults = new Map<string, Fault>();
  const hits = new Map<string, number>();
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  const signed = new Map<string, string>(); // release-assets path → the github.com path it stands for
  let base = '';
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://mirror');
    let path = decodeURIComponent(url.pathname).replace(/^\/+/, '');
    requests.push({ path, headers: req.headers });
    if (options.githubRedirects && GITHUB_DOWNLOAD.test(path)) {
      hits.set(path, (hits.get(path) ?? 0) + 1);
      if (faults.get(path) === 'missing') {
        res.writeHead(404).end('Not Found');
        return;
      }
      const asset = `release-assets.githubusercontent.com/github-production-release-asset/${100_000 + signed.size}/${randomUUID()}`;
      signed.set(asset, path);
      const name = path.split('/').pop() ?? '';
      const expires = new Date(Date.now() + 300_000).toISOString().replace(/\.\d+Z$/, 'Z');
      const query = `sp=r&sv=2018-11-09&sr=b&spr=https&se=${encodeURIComponent(expires)}&rscd=attachment%3B+filename%3D${name}&rsct=application%2Foctet-stream&sig=${randomUUID().replaceAll('-', '')}`;
      res.writeHead(302, { location: `${base}/${asset}?${query}`, 'content-length': 0 }).end();
      return;
    }
    const original = signed.get(path);
    if (original) {
      if (url.searchParams.get('sig') === null) {
        res.writeHead(403).end('AuthenticationFailed');
        return;
      }
      path = original; // the signed URL serves the github.com path it stands for, counted once, with its faults
    } else {
      hits.set(path, (hits.get(path) ?? 0) + 1);
    }
    const fault = faults.get(path);
    if (fault === 'rate-limited') {
      const message =
        "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)";
      res
        .writeHead(403, {
          'content-type': 'application/json; charset=utf-8',
          'x-ratelimit-limit': '60',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': String(RATE_LIMIT_RESET),
          'x-ratelimit-used': '60',
          'x-ratelimit-resource': 'core',
        })
        .end(
          JSON.stringify({
            message,
            documentation_url:
              'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits',
            status: '403',
          }),
        );
      return;
    }
    const file = join(root, path);
    const info = await stat(file).catch(() => undefined);
    if (fault === 'missing' || !info?.isFile() || path.includes('..')) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = await readFile(file);
    if (fault === 'slow') await new Promise((r) => setTimeout(r, 1_500));
    if (fault === 'corrupt') body[body.length >> 1] = (body[body.length >> 1] ?? 0) ^ 0xff;
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
    if (fault === 'truncate') {
      res.write(body.subarray(0, body.length >> 1), () => res.destroy());
    } else if (fault === 'stall') {
      res.write(body.subarray(0, 16)); // and never more; the client gives up
    } else {
      res.end(body);
    }
  });
  base = await listen(server);
  return {
    base,
    faults,
    hits,
    requests,
    close: () => close(server),
  };
}

/** Small stand-in executables for every component in `bin`; returns their paths by component. */
export async function standIns(bin: string): Promise<Record<string, string>> {
  await mkdir(bin, { recursive: true });
  const paths: Record<string, string> = {};
  for (const c of COMPONENT_NAMES) {
    paths[c] = join(bin, c);
    await writeFile(paths[c], `#!/bin/sh\n# stand-in ${c}\necho ${c} ${'x'.repeat(4096)}\n`);
    await chmod(paths[c], 0o755);
  }
  return paths;
}

/** A mirror in `dir`, written by `writeMirror`, of small stand-in executables for every component. */
export async function standInMirror(dir: string): Promise<void> {
  const bin = join(dir, '..', 'stand-ins');
  const paths = await standIns(bin);
  const platform = releasePlatform();
  if (!platform) throw new Error('the download tests need linux amd64 or arm64');
  await writeMirror(dir, { ...paths, kwokStages: join(bin, 'kwok-stages.yaml') } as unknown as BinaryPaths, platform);
}

/**
 * The upstream layout, written by hand from what each project publishes (not by `writeMirror`), for `binaries` (the
 * executables of every component, copied):
 * - `dl.k8s.io/release/<v>/bin/linux/<arch>/<name>` and `<name>.sha256` (the digest alone), for the Kubernetes four;
 * - `github.com/etcd-io/etcd/releases/download/<v>/etcd-<v>-linux-<arch>.tar.gz` (a top directory holding etcd and
 *   README.md) and `SHA256SUMS` listing every platform's archive;
 * - `github.com/kubernetes-sigs/kwok/releases/download/<v>/kwok-linux-<arch>` and no checksum file;
 * - `api.github.com/repos/<owner>/<repo>/releases/tags/<v>` for etcd and kwok: GitHub's "Get a release by tag name"
 *   answer, each asset with its `digest` (`sha256:<hex>`), `size` and `browser_download_url`, other platforms' assets
 *   included.
 * Returns the digest of every artifact written, by component.
 */
export async function upstreamMirror(
  dir: string,
  binaries: Readonly<Record<string, string>>,
): Promise<Record<string, string>> {
  const platform = releasePlatform();
  if (!platform) throw new Error('the download tests need linux amd64 or arm64');
  const { arch } = platform;
  const digests: Record<string, string> = {};
  const put = async (path: string, from: string | Buffer): Promise<{ sha256: string; size: number }> => {
    const target = join(dir, path);
    await mkdir(dirname(target), { recursive: true });
    if (typeof from === 'string') await copyFile(from, target);
    else await writeFile(target, from);
    const body = await readFile(target);
    return { sha256: createHash('sha256').update(body).digest('hex'), size: body.length };
  };
  for (const name of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl']) {
    const source = binaries[name];
    if (!source) continue;
    const path = `dl.k8s.io/release/${KUBERNETES_VERSION}/bin/linux/${arch}/${name}`;
    const { sha256 } = await put(path, source);
    await put(`${path}.sha256`, Buffer.from(sha256)); // as dl.k8s.io serves it: the hex digest, no newline, no name
    digests[name] = sha256;
  }
  const etcdDir = `github.com/etcd-io/etcd/releases/download/${ETCD_VERSION}`;
  const etcdName = `etcd-${ETCD_VERSION}-linux-${arch}`;
  const work = await mkdtemp(join(dir, '.etcd-'));
  const assets: GitHubAssetFixture[] = [];
  try {
    await mkdir(join(work, etcdName));
    await copyFile(binaries.etcd ?? '', join(work, etcdName, 'etcd'));
    await writeFile(join(work, etcdName, 'README.md'), '# etcd\n');
    await createTar({ gzip: true, file: join(work, `${etcdName}.tar.gz`), cwd: work }, [etcdName]);
    const etcd = await put(`${etcdDir}/${etcdName}.tar.gz`, join(work, `${etcdName}.tar.gz`));
    digests.etcd = etcd.sha256;
    const others = [`etcd-${ETCD_VERSION}-darwin-arm64.zip`, `etcd-${ETCD_VERSION}-linux-ppc64le.tar.gz`];
    const sums = [
      ...others.map((n) => `${createHash('sha256').update(n).digest('hex')}  ${n}`),
      `${etcd.sha256}  ${etcdName}.tar.gz`,
    ].join('\n');
    const sumsFile = await put(`${etcdDir}/SHA256SUMS`, Buffer.from(`${sums}\n`));
    assets.push(
      ...others.map((n) => ({ name: n, size: 1234, sha256: createHash('sha256').update(n).digest('hex') })),
      { name: `${etcdName}.tar.gz`, ...etcd },
      { name: 'SHA256SUMS', ...sumsFile },
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  await put(
    `api.github.com/repos/etcd-io/etcd/releases/tags/${ETCD_VERSION}`,
    Buffer.from(JSON.stringify(releaseAnswer('etcd-io/etcd', ETCD_VERSION, assets), null, 2)),
  );
  const kwokName = `kwok-linux-${arch}`;
  const kwok = await put(
    `github.com/kubernetes-sigs/kwok/releases/download/${KWOK_VERSION}/${kwokName}`,
    binaries.kwok ?? '',
  );
  digests.kwok = kwok.sha256;
  const kwokAssets: GitHubAssetFixture[] = ['kwok-darwin-arm64', 'kwokctl-linux-amd64', 'kwok-windows-amd64.exe'].map(
    (n) => ({ name: n, size: 4321, sha256: createHash('sha256').update(n).digest('hex') }),
  );
  kwokAssets.splice(1, 0, { name: kwokName, ...kwok });
  await put(
    `api.github.com/repos/kubernetes-sigs/kwok/releases/tags/${KWOK_VERSION}`,
    Buffer.from(JSON.stringify(releaseAnswer('kubernetes-sigs/kwok', KWOK_VERSION, kwokAssets), null, 2)),
  );
  return digests;
}

interface GitHubAssetFixture {
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
}

/** A release as GitHub's REST API answers "Get a release by tag name" (the fields of its documented example). */
function releaseAnswer(repo: string, tag: string, assets: readonly GitHubAssetFixture[]): Record<string, unknown> {
  const id = 200_000_000 + tag.length;
  const user = {
    login: 'k8s-release-robot',
    id: 33505452,
    node_id: 'MDQ6VXNlcjMzNTA1NDUy',
    type: 'User',
    site_admin: false,
  };
  return {
    url: `https://api.github.com/repos/${repo}/releases/${id}`,
    assets_url: `https://api.github.com/repos/${repo}/releases/${id}/assets`,
    upload_url: `https://uploads.github.com/repos/${repo}/releases/${id}/assets{?name,label}`,
    html_url: `https://github.com/${repo}/releases/tag/${tag}`,
    id,
    author: user,
    node_id: 'RE_kwDOExample',
    tag_name: tag,
    target_commitish: 'main',
    name: tag,
    draft: false,
    immutable: false,
    prerelease: false,
    created_at: '2026-05-20T08:00:00Z',
    updated_at: '2026-05-21T08:00:00Z',
    published_at: '2026-05-21T08:00:00Z',
    assets: assets.map((a, i) => ({
      url: `https://api.github.com/repos/${repo}/releases/assets/${300_000_000 + i}`,
      id: 300_000_000 + i,
      node_id: `RA_kwDOExample${i}`,
      name: a.name,
      label: '',
      uploader: user,
      content_type: 'application/octet-stream',
      state: 'uploaded',
      size: a.size,
      digest: `sha256:${a.sha256}`,
      download_count: 1000 + i,
      created_at: '2026-05-21T07:00:00Z',
      updated_at: '2026-05-21T07:00:00Z',
      browser_download_url: `https://github.com/${repo}/releases/download/${tag}/${a.name}`,
    })),
    tarball_url: `https://api.github.com/repos/${repo}/tarball/${tag}`,
    zipball_url: `https://api.github.com/repos/${repo}/zipball/${tag}`,
    body: `Release ${tag}`,
  };
}

export interface Proxy {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  /** `CONNECT host:port` tunnels and `GET http://…` forwards it carried, as `host:port`. */
  readonly carried: string[];
  close(): Promise<void>;
}

/** A forward proxy on loopback: tunnels CONNECT, forwards absolute-form requests, and only to 127.0.0.1. */
export async function startProxy(): Promise<Proxy> {
  const carried: string[] = [];
  const server = createServer((req, res) => {
    const target = new URL(req.url ?? '');
    carried.push(target.host);
    if (target.hostname !== '127.0.0.1') {
      res.writeHead(403).end('loopback only');
      return;
    }
    const forward = request(target, { method: req.method ?? 'GET', headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  server.on('connect', (req, socket, head) => {
    const [host, port] = (req.url ?? '').split(':');
    carried.push(req.url ?? '');
    if (host !== '127.0.0.1') {
      socket.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const upstream = connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket).pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
  });
  const url = await listen(server);
  return {
    url,
    carried,
    close: () => close(server),
  };
}

function close(server: Server): Promise<void> {
  return new Promise<void>((done) => {
    server.closeAllConnections();
    server.close(() => done());
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
