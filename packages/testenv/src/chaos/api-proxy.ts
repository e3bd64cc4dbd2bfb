/**
 * @module chaos/api-proxy
 * An HTTPS proxy on 127.0.0.1 in front of the kube-apiserver that sees each request a client makes, by verb and object
 * (`requestInfo`), and puts faults into them:
 * - **Answers of its own.** `answer(info)` may answer a request before the apiserver sees it: 409 Conflict, 429 Too
 *   Many Requests (with `Retry-After`) or 500, as a contended or overloaded apiserver does, with a `Status` body.
 * - **What the RBAC refuses.** `onDenied(info, message)` is called for each request the apiserver's authorizer refused
 *   (403 with RBAC's "cannot <verb> resource"; not a 403 of admission, a quota or a terminating namespace).
 * - **A crash between two writes.** `onApplied(info)` is awaited once the apiserver applied a write (2xx) and before
 *   the client has the answer: a caller that kills the client there crashes it right after that write.
 * - **A stale view.** `holdWatches()` holds the events of every watch, open and new (or of those it picks, by
 *   resource), until `releaseWatches()`; then they are delivered in order, or coalesced per object (`coalesce: true`):
 *   what a client sees that missed the states in between (an object added and deleted while held is never seen).
 * - **Connections dropped.** `resetConnections()` drops every connection open now, both sides: each client's (it
 *   sees its connection end mid-request or mid-watch: ECONNRESET, or a hang-up over TLS) and each to the apiserver
 *   (what was on its way ends there).
 *
 * It terminates TLS with a serving certificate of its own CA (`caPem`, for 127.0.0.1) and forwards each request over
 * TLS to the apiserver, trusting the apiserver's CA. A bearer token passes through; a client certificate cannot (give
 * the client a ServiceAccount's kubeconfig: `Environment.kubeconfigFor`).
 *
 * Guarantees: a request that is passed reaches the apiserver with its method, path, headers and body unchanged, except
 * that a watch asks for JSON (so its events can be read) and `Host` names the apiserver; a held watch loses no event
 * and reorders none unless coalescing was asked for; a request answered by the proxy never reaches the apiserver;
 * connections made after `resetConnections()` are served as before; `close()` ends every connection, and after it
 * nothing of the proxy keeps the event loop alive.
 */

import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, Agent as HttpsAgent, request, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { createLoopbackServingPki } from '../certs.ts';
import { TestenvError } from '../errors.ts';
import { resetSocket } from '../fault-link.ts';
import { listenOnLoopback } from '../ports.ts';
import { isWrite, type RequestInfo, requestInfo } from './request-info.ts';
import { WatchGate } from './watch-gate.ts';

/** An answer the proxy gives instead of the apiserver. */
export interface ProxyAnswer {
  /** 409 Conflict, 429 Too Many Requests or 500 Internal Error, each with its `Status` body. */
  readonly code: 409 | 429 | 500;
  /** For 429: the `Retry-After` header, in seconds (default 1). */
  readonly retryAfterSeconds?: number;
}

/** How a `ApiFaultProxy` is made. */
export interface ApiFaultProxyOptions {
  /** The apiserver: its URL (`https://127.0.0.1:6443`) and the CA that signed its serving certificate. */
  readonly target: { readonly url: string; readonly caPem: string };
  /** The proxy's own CA and serving certificate for 127.0.0.1 (PEM); by default a new one (see `caPem`). */
  readonly serving?: { readonly caPem: string; readonly certPem: string; readonly keyPem: string };
  /** Called for each request before it is forwarded; an answer is given instead of the apiserver's. */
  readonly answer?: (info: RequestInfo) => ProxyAnswer | undefined;
  /** Awaited after the apiserver applied a write (2xx), before the client has the answer. */
  readonly onApplied?: (info: RequestInfo) => void | Promise<void>;
  /** Called when the apiserver's authorizer refused a request (403, "… cannot <verb> resource …"), with its message. */
  readonly onDenied?: (info: RequestInfo, message: string) => void;
}

/** What passed through a proxy since it started. */
export interface ApiFaultProxyStats {
  /** Requests by verb, forwarded or answered. */
  readonly requests: Readonly<Record<string, number>>;
  /** Writes the apiserver applied (2xx). */
  readonly applied: number;
  /** Requests the proxy answered itself, by code. */
  readonly answered: Readonly<Record<string, number>>;
  /** Watch events delivered. */
  readonly watchEvents: number;
  /** Held watch events dropped by a coalescing release (an older state of an object delivered later). */
  readonly coalescedAway: number;
}

const REASONS = { 409: 'Conflict', 429: 'TooManyRequests', 500: 'InternalError' } as const;

/** A CA of its own and a serving certificate for 127.0.0.1 signed by it, made in a directory removed at once. */
async function newServingPki(): Promise<{ caPem: string; certPem: string; keyPem: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-api-proxy-'));
  try {
    const { ca, serving } = await createLoopbackServingPki(dir);
    return { caPem: ca.certPem, certPem: serving.certPem, keyPem: serving.keyPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** An HTTPS proxy in front of the apiserver that sees requests; see the module comment. */
export class ApiFaultProxy {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** The CA a client must trust to talk to the proxy (PEM). */
  readonly caPem: string;
  readonly #server: Server;
  readonly #agent: HttpsAgent;
  readonly #target: URL;
  readonly #options: ApiFaultProxyOptions;
  readonly #sockets = new Set<Socket>();
  readonly #gates = new Set<WatchGate>();
  readonly #requests: Record<string, number> = {};
  readonly #answered: Record<string, number> = {};
  #applied = 0;
  #watchEvents = 0;
  #coalescedAway = 0;
  /** Which watches are held now (by what they watch); none when undefined. */
  #holding: ((info: RequestInfo) => boolean) | undefined;
  #closed = false;

  /** Starts a proxy on a free port of 127.0.0.1; `FaultProxyListenFailed` when it cannot listen. */
  static async start(options: ApiFaultProxyOptions): Promise<ApiFaultProxy> {
    const target = new URL(options.target.url);
    if (target.protocol !== 'https:')
      throw new TestenvError('InvalidOption', `the proxy's target must be an https URL, got ${options.target.url}`);
    const serving = options.serving ?? (await newServingPki());
    const server = createServer({ cert: serving.certPem, key: serving.keyPem });
    const port = await listenOnLoopback(server, 'API proxy');
    return new ApiFaultProxy(server, port, target, options, serving.caPem);
  }

  private constructor(server: Server, port: number, target: URL, options: ApiFaultProxyOptions, caPem: string) {
    this.#server = server;
    this.port = port;
    this.#target = target;
    this.#options = options;
    this.caPem = caPem;
    this.#agent = new HttpsAgent({ keepAlive: true, ca: options.target.caPem });
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    server.on('secureConnection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
    server.on('tlsClientError', () => {});
    server.on('error', () => {});
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`opkit API proxy: ${(err as Error).message}\n`);
      });
    });
  }

  /** `https://127.0.0.1:<port>`: the server URL to give a client that should go through the proxy. */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** Counters since the proxy started. */
  get stats(): ApiFaultProxyStats {
    return {
      requests: { ...this.#requests },
      applied: this.#applied,
      answered: { ...this.#answered },
      watchEvents: this.#watchEvents,
      coalescedAway: this.#coalescedAway,
    };
  }

  /**
   * Holds the events of every watch, open now or opened later, until `releaseWatches()`; with `which`, only of the
   * watches it picks (by resource, namespace, …): the others flow, as one informer can lag behind another.
   */
  holdWatches(which: (info: RequestInfo) => boolean = () => true): void {
    this.#holding = which;
  }

  /** Delivers what the watches held, in order, or coalesced per object; later events flow again. */
  releaseWatches(options: { readonly coalesce?: boolean } = {}): void {
    this.#holding = undefined;
    for (const gate of this.#gates) this.#coalescedAway += gate.release(options.coalesce === true);
  }

  /**
   * Drops every connection open now: each client's (a plain TCP one with an RST; a TLS one is destroyed, which the
   * client sees as its connection ending, whatever it was doing), then each to the apiserver (its requests and watches
   * end there too).
   */
  resetConnections(): void {
    const open = [...this.#sockets];
    for (const socket of open) if (!(socket instanceof TLSSocket)) resetSocket(socket);
    for (const socket of open) socket.destroy();
    const upstream = [...Object.values(this.#agent.sockets), ...Object.values(this.#agent.freeSockets)];
    for (const socket of upstream.flat()) socket?.destroy();
  }

  /** Ends every connection and stops listening. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    this.#agent.destroy();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const info = requestInfo(req.method ?? 'GET', req.url ?? '/');
    this.#requests[info.verb] = (this.#requests[info.verb] ?? 0) + 1;
    const answer = this.#options.answer?.(info);
    if (answer !== undefined) {
      this.#answer(info, answer, req, res);
      return;
    }
    const watch = info.verb === 'watch';
    const headers = { ...req.headers, host: this.#target.host };
    if (watch) headers.accept = 'application/json';
    const upstream = request({
      agent: this.#agent,
      host: this.#target.hostname,
      port: this.#target.port,
      method: req.method,
      path: req.url,
      headers,
    });
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      upstream.once('response', resolve);
      upstream.once('error', reject);
    });
    upstream.on('error', () => {}); // after the answer: the client's side ends too (below)
    req.pipe(upstream);
    // the client went away before its answer was complete (a watch it closed, a timeout): so does the apiserver's
    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
    });
    const response = await answered;
    const status = response.statusCode ?? 502;
    if (isWrite(info.verb) && status < 300) {
      this.#applied++;
      await this.#options.onApplied?.(info);
    }
    if (res.destroyed) {
      response.destroy();
      return;
    }
    response.on('error', () => res.destroy());
    res.writeHead(status, response.headers);
    if (status === 403 && this.#options.onDenied !== undefined) {
      const body = await readAll(response).catch(() => Buffer.alloc(0));
      const message = statusMessage(body);
      if (DENIED.test(message)) this.#options.onDenied(info, message);
      res.end(body);
      return;
    }
    if (!watch || status >= 300) {
      response.pipe(res);
      return;
    }
    this.#streamWatch(info, response, res);
  }

  /** Answers `req` itself with `answer`'s code and a `Status` body; the apiserver never sees it. */
  #answer(info: RequestInfo, answer: ProxyAnswer, req: IncomingMessage, res: ServerResponse): void {
    this.#answered[answer.code] = (this.#answered[answer.code] ?? 0) + 1;
    req.resume();
    const reason = REASONS[answer.code];
    const body = JSON.stringify({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${reason} (injected by opkit's API proxy)`,
      reason,
      ...(info.name !== undefined ? { details: { name: info.name, kind: info.resource } } : {}),
      code: answer.code,
    });
    res.writeHead(answer.code, {
      'content-type': 'application/json',
      ...(answer.code === 429 ? { 'retry-after': String(answer.retryAfterSeconds ?? 1) } : {}),
    });
    res.end(body);
  }

  /** A watch's events, line by line through a gate that holds them while the proxy holds watches. */
  #streamWatch(info: RequestInfo, response: IncomingMessage, res: ServerResponse): void {
    const gate: WatchGate = new WatchGate(
      (line) => {
        this.#watchEvents++;
        res.write(`${line}\n`);
      },
      () => this.#holding?.(info) === true,
      () => {
        this.#gates.delete(gate);
        res.end();
      },
    );
    this.#gates.add(gate);
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => gate.push(chunk));
    response.once('end', () => gate.finish());
    res.once('close', () => this.#gates.delete(gate));
  }
}

/** The message of an authorizer's refusal: `User "…" cannot patch resource "namespaces" in API group "" …`. */
const DENIED = / cannot [a-z]+ resource "/;
/** That message, as RBAC words it, within a body of another encoding. */
const RBAC_MESSAGE =
  /[a-z.]+ "[^"]*" is forbidden: User "[^"]*" cannot [a-z]+ resource "[^"]*"(?: in API group "[^"]*")?(?: in the namespace "[^"]*"| at the cluster scope)?/;

/** A response's whole body (a 403's `Status`: small). */
async function readAll(response: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * The `message` of a `Status` body, JSON or protobuf (whose strings are plain UTF-8: the refusal is found in it), or
 * '' when it has none.
 */
function statusMessage(body: Buffer): string {
  const text = body.toString('utf8');
  try {
    const status = JSON.parse(text) as { message?: unknown };
    return typeof status.message === 'string' ? status.message : '';
  } catch {
    return RBAC_MESSAGE.exec(text)?.[0] ?? '';
  }
}
