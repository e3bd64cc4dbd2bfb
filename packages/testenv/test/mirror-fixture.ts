/**
 * @module mirror-fixture
 * Test fixtures for downloads, all on 127.0.0.1: a static server for a mirror directory (the upstream URL layout of
 * `release.ts`, written by `writeMirror`) that can corrupt, truncate, stall, delay or refuse chosen files and counts
 * requests; a mirror of small stand-in executables; and a tiny forward/CONNECT proxy that records what it carried.
 */
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { join } from 'node:path';
import type { BinaryPaths } from '../src/binaries.ts';
import { writeMirror } from '../src/mirror.ts';
import { releasePlatform } from '../src/release.ts';
import { COMPONENT_NAMES } from '../src/versions.ts';

/** `corrupt`: one byte flipped; `truncate`: half the bytes, then the connection closes; `stall`: headers and a few
 * bytes, then nothing; `slow`: served after 1.5 s; `missing`: 404. */
export type Fault = 'corrupt' | 'truncate' | 'stall' | 'slow' | 'missing';

export interface MirrorServer {
  /** The value for OPKIT_DOWNLOAD_MIRROR. */
  readonly base: string;
  readonly faults: Map<string, Fault>;
  /** Requests per path (without the leading slash), faulty ones included. */
  readonly hits: Map<string, number>;
  close(): Promise<void>;
}

export async function serveMirror(root: string): Promise<MirrorServer> {
  const faults = new Map<string, Fault>();
  const hits = new Map<string, number>();
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://mirror').pathname).replace(/^\/+/, '');
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const fault = faults.get(path);
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
  const base = await listen(server);
  return {
    base,
    faults,
    hits,
    close: () => close(server),
  };
}

/** A mirror in `dir` of small stand-in executables for every component; returns their paths. */
export async function standInMirror(dir: string): Promise<void> {
  const bin = join(dir, '..', 'stand-ins');
  await mkdir(bin, { recursive: true });
  const paths: Record<string, string> = {};
  for (const c of COMPONENT_NAMES) {
    paths[c] = join(bin, c);
    await writeFile(paths[c], `#!/bin/sh\n# stand-in ${c}\necho ${c} ${'x'.repeat(4096)}\n`);
    await chmod(paths[c], 0o755);
  }
  const platform = releasePlatform();
  if (!platform) throw new Error('the download tests need linux amd64 or arm64');
  await writeMirror(dir, { ...paths, kwokStages: join(bin, 'kwok-stages.yaml') } as unknown as BinaryPaths, platform);
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
