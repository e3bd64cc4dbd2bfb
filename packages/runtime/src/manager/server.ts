/**
 * @module manager/server
 * The manager's HTTP endpoints: `/metrics` (Prometheus text) and `/healthz` + `/readyz` (with `/healthz/<check>` and
 * `/readyz/<check>`, `?verbose` listing each check), usable as Kubernetes probes. Bind addresses are `host:port`,
 * `:port` (all interfaces) or `0` (disabled); port 0 picks a free port (see `address`).
 *
 * A server given `tls` serves HTTPS only (HTTP/1.1, with tls/keypair.ts's settings: TLS 1.2 or later, at start and
 * after every `setCertificate`, which swaps the pair for new connections). A server given `authorize` asks it about every request before routing: a refusal answers its status
 * (401, 403 or 500) with a one-line message and the endpoint is never called (see manager/metricsauth.ts).
 */

import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { UsageError } from '../errors.ts';
import { boundAddress, parseBindAddress } from '../internal/address.ts';
import { http } from '../internal/http.ts';
import { type KeyPair, secureContextOptions } from '../tls/keypair.ts';
import type { ScrapeDecision, ScrapeRequest } from './metricsauth.ts';

export type Check = () => Promise<void> | void;

export interface Endpoint {
  readonly path: string;
  handle(query: URLSearchParams): Promise<{ status: number; contentType: string; body: string }>;
}

export interface ServingOptions {
  /** Serve HTTPS with this certificate and key. */
  readonly tls?: KeyPair;
  /** Decides each request before it is routed. */
  /** `signal` aborts when the client disconnects before its answer. */
  readonly authorize?: (req: ScrapeRequest, signal: AbortSignal) => Promise<ScrapeDecision>;
}

export class HttpEndpoints {
  readonly #server: Server | HttpsServer;
  readonly #bind: { host: string; port: number };
  readonly #endpoints: Endpoint[];
  readonly #authorize: ServingOptions['authorize'];

  constructor(bindAddress: string, endpoints: Endpoint[], options: ServingOptions = {}) {
    this.#bind = parseBindAddress(bindAddress);
    this.#endpoints = endpoints;
    this.#authorize = options.authorize;
    const handler = (req: IncomingMessage, res: ServerResponse) => this.#filter(req, res);
    this.#server = options.tls
      ? createHttpsServer(secureContextOptions(options.tls), handler)
      : http.createServer(handler);
  }

  /** True when serving HTTPS. */
  get secure(): boolean {
    return 'setSecureContext' in this.#server;
  }

  /** Serves `pair` on new connections (HTTPS servers only), with the same TLS settings as at start. */
  setCertificate(pair: KeyPair): void {
    if ('setSecureContext' in this.#server) this.#server.setSecureContext(secureContextOptions(pair));
  }

  #filter(req: IncomingMessage, res: ServerResponse): void {
    if (!this.#authorize) {
      this.#route(req, res);
      return;
    }
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const gone = new AbortController();
    res.once('close', () => {
      if (!res.writableFinished) gone.abort(new DOMException('the client disconnected', 'AbortError'));
    });
    this.#authorize({ authorization: req.headers.authorization, path, method: req.method ?? 'GET' }, gone.signal).then(
      (d) => {
        if (gone.signal.aborted) return;
        if (d.allowed) this.#route(req, res);
        else res.writeHead(d.status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${d.message}\n`);
      },
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('Internal Server Error\n'),
    );
  }

  #route(req: IncomingMessage, res: ServerResponse): void {
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
    return boundAddress(this.#server);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }
}

/** A named set of checks served at `path`: 200 "ok" when all pass, 500 with the failing checks otherwise. */
export class CheckSet implements Endpoint {
  readonly path: string;
  readonly #checks = new Map<string, Check>();

  constructor(path: string) {
    this.path = path;
  }

  add(name: string, check: Check): void {
    if (this.#checks.has(name)) {
      throw new UsageError('InvalidArgument', `a ${this.path} check named "${name}" already exists`);
    }
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
