/**
 * @module manager/server
 * The manager's HTTP endpoints: `/metrics` (Prometheus text) and `/healthz` + `/readyz` (with `/healthz/<check>` and
 * `/readyz/<check>`, `?verbose` listing each check), usable as Kubernetes probes. Bind addresses are `host:port`,
 * `:port` (all interfaces) or `0` (disabled); port 0 picks a free port (see `address`).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Check = () => Promise<void> | void;

export interface Endpoint {
  readonly path: string;
  handle(query: URLSearchParams): Promise<{ status: number; contentType: string; body: string }>;
}

export class HttpEndpoints {
  readonly #server: Server;
  readonly #bind: { host: string; port: number };
  readonly #endpoints: Endpoint[];

  constructor(bindAddress: string, endpoints: Endpoint[]) {
    this.#bind = parseBindAddress(bindAddress);
    this.#endpoints = endpoints;
    this.#server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const ep = this.#endpoints.find((e) => url.pathname === e.path || url.pathname.startsWith(`${e.path}/`));
      if (!ep || req.method !== 'GET') {
        res.writeHead(ep ? 405 : 404).end();
        return;
      }
      const query = new URLSearchParams(url.search);
      if (url.pathname !== ep.path) query.set('check', url.pathname.slice(ep.path.length + 1));
      ep.handle(query).then(
        (r) => res.writeHead(r.status, { 'content-type': r.contentType }).end(r.body),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
      );
    });
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#bind.port, this.#bind.host, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
  }

  /** `host:port` actually bound. */
  get address(): string {
    const a = this.#server.address() as AddressInfo | null;
    return a ? `${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}` : '';
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

export function parseBindAddress(address: string): { host: string; port: number } {
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) throw new TypeError(`bind address "${address}" must be host:port, :port or 0`);
  const host = (m[1] as string).replace(/^\[|\]$/g, '') || '0.0.0.0';
  const port = Number(m[2]);
  if (port > 65_535) throw new TypeError(`bind address "${address}": port ${port} is out of range`);
  return { host, port };
}

/** A named set of checks served at `path`: 200 "ok" when all pass, 500 with the failing checks otherwise. */
export class CheckSet implements Endpoint {
  readonly path: string;
  readonly #checks = new Map<string, Check>();

  constructor(path: string) {
    this.path = path;
  }

  add(name: string, check: Check): void {
    if (this.#checks.has(name)) throw new Error(`a ${this.path} check named "${name}" already exists`);
    this.#checks.set(name, check);
  }

  async handle(query: URLSearchParams): Promise<{ status: number; contentType: string; body: string }> {
    const only = query.get('check');
    const checks = [...this.#checks].filter(([name]) => !only || name === only);
    if (only && checks.length === 0) return { status: 404, contentType: 'text/plain', body: `no check "${only}"\n` };
    const lines: string[] = [];
    let ok = true;
    for (const [name, check] of checks) {
      try {
        await check();
        lines.push(`[+]${name} ok`);
      } catch (err) {
        ok = false;
        lines.push(`[-]${name} failed: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const verbose = query.has('verbose') || !ok;
    const body = verbose ? `${lines.join('\n')}\n${this.path.slice(1)} check ${ok ? 'passed' : 'failed'}\n` : 'ok';
    return { status: ok ? 200 : 500, contentType: 'text/plain; charset=utf-8', body };
  }
}
