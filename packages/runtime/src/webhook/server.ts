/**
 * @module webhook/server
 * `WebhookServer`: the HTTPS endpoint the apiserver calls for admission (`AdmissionReview` admission.k8s.io/v1) and
 * conversion (`ConversionReview` apiextensions.k8s.io/v1). A Manager runs it on every replica (it needs no leadership).
 *
 * Guarantees:
 * - Serves on `:9443` by default (with SO_REUSEPORT, so replicas on one host can share it), TLS ≥ 1.2, with the pair from its `CertificateSource`; a rotated pair is used for
 *   new connections at once (`setSecureContext`), open connections finish on the old one, so no request is lost.
 * - Each review is answered within the apiserver's timeout (its `?timeout=` query, default 10 s): the handler's
 *   signal aborts 250 ms before it, and the review is then answered with a denial (code 504) instead of no answer.
 * - A body that is not JSON, not a review of the expected version, not `application/json`, or larger than
 *   `maxBodyBytes` (default 7 MiB, as controller-runtime) gets an HTTP 400 with a one-line reason;
 *   no input crashes the process. Unknown paths get 404, other methods 405.
 * - Metrics under controller-runtime's names: `controller_runtime_webhook_requests_total{webhook,code}`,
 *   `controller_runtime_webhook_latency_seconds{webhook}`, `controller_runtime_webhook_requests_in_flight{webhook}`.
 * - `ready()` passes only once a TLS handshake with the server itself succeeds (controller-runtime's StartedChecker),
 *   so a readiness probe on it keeps the Service from routing to a replica that cannot answer yet.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { OpkitError } from '../errors.ts';
import { boundAddress, parseBindAddress } from '../internal/address.ts';
import { type Logger, silentLogger } from '../logger.ts';
import type { Counter, Gauge, Histogram, Registry } from '../prometheus.ts';
import { secureContextOptions } from '../tls/keypair.ts';
import type { CertificateSource } from '../tls/sources.ts';
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from './admission.ts';
import type { ConversionHandler, ConversionRequest, ConversionResponse } from './conversion.ts';

export type WebhookServerErrorCode = 'BindFailed' | 'DuplicatePath' | 'NotStarted';

export class WebhookServerError extends OpkitError<WebhookServerErrorCode> {
  override readonly name = 'WebhookServerError';
}

export interface WebhookServerOptions {
  /** `host:port` or `:port` (default `:9443`); port 0 picks a free port. */
  readonly bindAddress?: string;
  readonly certificates: CertificateSource;
  /** Where the webhook metrics go (default: not recorded). */
  readonly registry?: Registry;
  readonly log?: Logger;
  /** Largest accepted body (default 7 MiB). */
  readonly maxBodyBytes?: number;
  /** Let the process exit while the server still listens (a server a test or tool runs beside its work). */
  readonly unref?: boolean;
}

const DEFAULT_TIMEOUT_MS = 10_000;
const TIMEOUT_MARGIN_MS = 250;
const MAX_TIMEOUT_MS = 30_000;
const OPERATIONS: ReadonlySet<unknown> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Route =
  | { readonly type: 'admission'; readonly handler: AdmissionHandler }
  | { readonly type: 'conversion'; readonly handler: ConversionHandler };

interface WebhookMetrics {
  readonly total: Counter<'webhook' | 'code'>;
  readonly latency: Histogram<'webhook'>;
  readonly inFlight: Gauge<'webhook'>;
}

class BadRequest extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export class WebhookServer {
  /** A Manager runs the server on every replica. */
  readonly needLeaderElection = false;
  readonly #o: WebhookServerOptions;
  readonly #routes = new Map<string, Route>();
  readonly #log: Logger;
  readonly #metrics: WebhookMetrics | undefined;
  #server: Server | undefined;
  #serving = false;

  constructor(options: WebhookServerOptions) {
    this.#o = options;
    this.#log = options.log ?? silentLogger;
    const r = options.registry;
    this.#metrics = r && {
      total: r.counter({
        name: 'controller_runtime_webhook_requests_total',
        help: 'Total number of admission requests by HTTP status code.',
        labelNames: ['webhook', 'code'],
      }),
      latency: r.histogram({
        name: 'controller_runtime_webhook_latency_seconds',
        help: 'Histogram of the latency of processing admission requests',
        labelNames: ['webhook'],
        buckets: LATENCY_BUCKETS,
      }),
      inFlight: r.gauge({
        name: 'controller_runtime_webhook_requests_in_flight',
        help: 'Current number of admission requests being served.',
        labelNames: ['webhook'],
      }),
    };
  }

  /** Serves an admission handler (mutating or validating) at `path`. */
  admission(path: string, handler: AdmissionHandler): this {
    return this.#add(path, { type: 'admission', handler });
  }

  /** Serves a conversion handler at `path` (conventionally `/convert`). */
  conversion(path: string, handler: ConversionHandler): this {
    return this.#add(path, { type: 'conversion', handler });
  }

  /** The registered paths. */
  get paths(): string[] {
    return [...this.#routes.keys()];
  }

  /** `host:port` actually bound (after start). */
  get address(): string {
    return boundAddress(this.#server);
  }

  get port(): number {
    return (this.#server?.address() as AddressInfo | null | undefined)?.port ?? 0;
  }

  /** Serves until `signal` aborts; rejects with `WebhookServerError` when it cannot listen or load its certificate. */
  async start(signal: AbortSignal): Promise<void> {
    const pair = await this.#o.certificates.load(signal).catch((err: unknown) => {
      if (signal.aborted) return undefined; // stopped while waiting for a certificate: nothing to serve
      throw err;
    });
    if (!pair) return;
    const server = createServer(secureContextOptions(pair), (req, res) => this.#serve(req, res));
    server.headersTimeout = 10_000;
    // the apiserver (Go) keeps idle connections for 90 s; closing them sooner (Node's default: 5 s) makes it dial and
    // handshake again in the middle of traffic
    server.keepAliveTimeout = 120_000;
    server.requestTimeout = MAX_TIMEOUT_MS + 5_000;
    server.on('tlsClientError', () => {}); // a failed handshake is the client's problem, not a crash
    this.#server = server;
    const unsubscribe = this.#o.certificates.onChange((p) => {
      server.setSecureContext(secureContextOptions(p));
      this.#log.info({}, 'webhook serving certificate reloaded');
    });
    const watching = new AbortController();
    this.#o.certificates.watch(AbortSignal.any([signal, watching.signal]));
    const bind = parseBindAddress(this.#o.bindAddress ?? ':9443');
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // reusePort: replicas run side by side on one host (local runs, tests) share the port, as behind a Service
        server.listen({ port: bind.port, host: bind.host, reusePort: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      unsubscribe();
      watching.abort();
      throw new WebhookServerError(
        'BindFailed',
        `webhook server cannot listen on ${bind.host}:${bind.port}: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
    this.#serving = true;
    if (this.#o.unref) server.unref();
    this.#log.info({ address: this.address, paths: this.paths }, 'serving webhooks');
    if (!signal.aborted)
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    this.#serving = false;
    unsubscribe();
    watching.abort();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      // requests under way get the apiserver's longest timeout; then the rest is cut
      setTimeout(() => server.closeAllConnections(), MAX_TIMEOUT_MS).unref();
    });
  }

  /** A readiness check: passes once a TLS handshake with this server succeeds. */
  ready = async (): Promise<void> => {
    if (!this.#serving || !this.#server)
      throw new WebhookServerError('NotStarted', 'the webhook server is not serving yet');
    const a = this.#server.address() as AddressInfo;
    const host = a.address === '0.0.0.0' ? '127.0.0.1' : a.address === '::' ? '::1' : a.address;
    await new Promise<void>((resolve, reject) => {
      const socket = connect({ host, port: a.port, rejectUnauthorized: false, timeout: 2_000 }, () => {
        socket.end();
        resolve();
      });
      socket.once('error', (err) => reject(new WebhookServerError('NotStarted', `webhook server: ${err.message}`)));
      socket.once('timeout', () => {
        socket.destroy();
        reject(new WebhookServerError('NotStarted', 'webhook server: TLS handshake timed out'));
      });
    });
  };

  #add(path: string, route: Route): this {
    if (!path.startsWith('/')) throw new TypeError(`webhook path "${path}" must start with "/"`);
    if (this.#routes.has(path)) throw new WebhookServerError('DuplicatePath', `a webhook is already served at ${path}`);
    this.#routes.set(path, route);
    return this;
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const route = this.#routes.get(url.pathname);
    if (!route) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no webhook at ${url.pathname}\n`);
      return;
    }
    const webhook = url.pathname;
    const started = performance.now();
    this.#metrics?.inFlight.inc({ webhook });
    const finish = (status: number, body: string, contentType = 'application/json') => {
      this.#metrics?.inFlight.dec({ webhook });
      this.#metrics?.total.inc({ webhook, code: String(status) });
      this.#metrics?.latency.observe({ webhook }, (performance.now() - started) / 1000);
      if (!res.headersSent) res.writeHead(status, { 'content-type': contentType }).end(body);
    };
    const timeoutMs = parseTimeout(url.searchParams.get('timeout'));
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), Math.max(timeoutMs - TIMEOUT_MARGIN_MS, 1));
    this.#handle(req, route, deadline.signal).then(
      (body) => {
        clearTimeout(timer);
        finish(200, body);
      },
      (err: unknown) => {
        clearTimeout(timer);
        const status = err instanceof BadRequest ? err.status : 500;
        if (status === 500) this.#log.error({ webhook, err: (err as Error).message }, 'webhook failed');
        // a client still sending an oversized body: answer, then stop reading
        if (status === 400) res.setHeader('connection', 'close');
        finish(status, `${(err as Error).message}\n`, 'text/plain; charset=utf-8');
      },
    );
  }

  async #handle(req: IncomingMessage, route: Route, signal: AbortSignal): Promise<string> {
    if (req.method !== 'POST') {
      req.resume();
      throw new BadRequest(405, `method ${req.method ?? ''} not allowed: webhooks take POST`);
    }
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json') {
      req.resume();
      throw new BadRequest(400, `content-type ${JSON.stringify(type)} not supported: send application/json`);
    }
    const body = await readBody(req, this.#o.maxBodyBytes ?? 7 * 1024 * 1024);
    let review: unknown;
    try {
      review = JSON.parse(body);
    } catch (err) {
      throw new BadRequest(400, `the body is not JSON: ${(err as Error).message}`);
    }
    const answer =
      route.type === 'admission'
        ? this.#admit(route.handler, review, signal)
        : this.#convert(route.handler, review, signal);
    return JSON.stringify(await answer);
  }

  async #admit(handler: AdmissionHandler, review: unknown, signal: AbortSignal): Promise<unknown> {
    const request = reviewRequest(review, 'admission.k8s.io/v1', 'AdmissionReview') as unknown as AdmissionRequest;
    if (!OPERATIONS.has(request.operation)) {
      throw new BadRequest(
        400,
        `AdmissionReview.request.operation ${JSON.stringify(request.operation)} is not one of ${[...OPERATIONS].join(', ')}`,
      );
    }
    const response = await withDeadline(
      handler(request, { signal }),
      signal,
      (): AdmissionResponse => ({
        uid: request.uid,
        allowed: false,
        status: { status: 'Failure', code: 504, reason: 'Timeout', message: 'the webhook did not answer in time' },
      }),
    );
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { ...response, uid: request.uid } };
  }

  async #convert(handler: ConversionHandler, review: unknown, signal: AbortSignal): Promise<unknown> {
    const request = reviewRequest(
      review,
      'apiextensions.k8s.io/v1',
      'ConversionReview',
    ) as unknown as ConversionRequest;
    if (typeof request.desiredAPIVersion !== 'string' || !Array.isArray(request.objects)) {
      throw new BadRequest(400, 'ConversionReview.request needs desiredAPIVersion and objects');
    }
    const response = await withDeadline(
      handler(request, { signal }),
      signal,
      (): ConversionResponse => ({
        uid: request.uid,
        convertedObjects: [],
        result: { status: 'Failure', message: 'the conversion webhook did not answer in time' },
      }),
    );
    return {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: { ...response, uid: request.uid },
    };
  }
}

function reviewRequest(review: unknown, apiVersion: string, kind: string): Record<string, unknown> & { uid: string } {
  if (typeof review !== 'object' || review === null || Array.isArray(review)) {
    throw new BadRequest(400, `the body must be a ${kind} object`);
  }
  const r = review as Record<string, unknown>;
  if (r.apiVersion !== apiVersion || r.kind !== kind) {
    throw new BadRequest(400, `expected ${kind} ${apiVersion}, got ${String(r.kind)} ${String(r.apiVersion)}`);
  }
  const request = r.request;
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new BadRequest(400, `${kind}.request is missing`);
  }
  const uid = (request as Record<string, unknown>).uid;
  if (typeof uid !== 'string' || uid === '') throw new BadRequest(400, `${kind}.request.uid is missing`);
  return request as Record<string, unknown> & { uid: string };
}

/** The apiserver's `timeout` query (`10s`, `500ms`); default 10 s, at most 30 s. */
export function parseTimeout(value: string | null): number {
  const m = value === null ? null : /^(\d+)(ms|s|m)$/.exec(value);
  if (!m) return DEFAULT_TIMEOUT_MS;
  const n = Number(m[1]) * (m[2] === 'ms' ? 1 : m[2] === 's' ? 1_000 : 60_000);
  return Math.min(Math.max(n, 1), MAX_TIMEOUT_MS);
}

function withDeadline<T>(work: Promise<T>, signal: AbortSignal, onTimeout: () => T): Promise<T> {
  if (signal.aborted) return Promise.resolve(onTimeout());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => resolve(onTimeout());
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    return Promise.reject(new BadRequest(400, `the body is larger than ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      if (size > limit) {
        failed = true;
        reject(new BadRequest(400, `the body is larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!failed) resolve(new TextDecoder('utf-8', { fatal: false }).decode(Buffer.concat(chunks)));
    });
    req.on('error', (err) => {
      if (!failed) reject(new BadRequest(400, `reading the body failed: ${err.message}`));
      failed = true;
    });
  });
}
