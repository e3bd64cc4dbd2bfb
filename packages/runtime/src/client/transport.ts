/**
 * @module client/transport
 * HTTP(S) to one apiserver: credentials from the kubeconfig's authenticator (a 401 invalidates them and the request is
 * tried once more), impersonation headers, a user agent, an optional client-side QPS/burst limit (off by default; the
 * runtime's one token bucket, internal/bucket.ts), a hook for request metrics, and tracing spans. Connections and their
 * certificate rotation are client/pool.ts; reading answers is client/body.ts; when to retry is client/retry.ts.
 *
 * Guarantees:
 * - The deadline of a non-watch request (default 60 s) covers the whole request — every exchange, the response bodies
 *   and the waits between retries included: a body that stalls fails with `Timeout`, so no caller can hang on a
 *   half-sent answer. A watch (`stream`) has no deadline; its reader guards against silence (see client/watch.ts).
 * - Aborting the caller's signal (or the client's bound one) cuts the request off at once (`Aborted`), whatever stage
 *   it is in (the wait for a token of the QPS limit included). A request's `guard` is asked after every wait (QPS
 *   token, connection, credentials), and again when its connection is ready (TCP and TLS), right before its first
 *   byte is written: a guard that throws refuses it (`Aborted`) and nothing of it is sent, so no wait can carry a
 *   request past the moment its guard would refuse it. Signals are followed with listeners removed when the
 *   request ends, so a signal that lives as long as a controller collects nothing per request.
 * - Retries as client/retry.ts says: throttled answers up to 3 times after the delay asked for, a GET whose
 *   connection dropped up to 3 times; writes are never replayed. Everything else becomes an `ApiError`. A caller that
 *   retries on its own (the metrics endpoint's reviews) leaves the throttled answers to this layer.
 * - A 2xx answer in protobuf that cannot be decoded (client/protobuf/codec.ts: `Malformed`) is asked for once more in
 *   JSON, so a decoder that lags the apiserver costs a request, never a result. A write is never sent twice: its
 *   object is read back in JSON (`readBack`), or without one the write fails with `Malformed`.
 * - Connections keep alive, send TCP keep-alive probes after 15 s of silence, and move to a new pool when the client
 *   certificate rotates (client/pool.ts).
 * - With `fieldValidation`, every POST, PUT and PATCH that names none asks for it; every answer's warnings go to
 *   `onWarning` (client/warnings.ts).
 */
import type { IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import { TokenBucket } from '../internal/bucket.ts';
import { http } from '../internal/http.ts';
import { linked } from '../internal/requests.ts';
import { ATTR, endRequestSpan, type Span, startRequestSpan } from '../tracing/spans.ts';
import type { Credentials } from './auth.ts';
import { aborted, cutOff, errorAnswer, parseBody, readBody } from './body.ts';
import { ApiError } from './errors.ts';
import { impersonationHeaders } from './impersonation.ts';
import type { ConnectionConfig } from './kubeconfig.ts';
import { ConnectionPools, KEEPALIVE_MS, type Lease } from './pool.ts';
import { PROTOBUF } from './protobuf/codec.ts';
import type { FieldMask } from './protobuf/reader.ts';
import { answerRetryDelayMs, droppedRetryDelayMs, pause } from './retry.ts';
import type { FieldValidation } from './types.ts';
import { reportWarnings, type WarningHandler } from './warnings.ts';

/** Where the transport reports each finished request (controller-runtime's `rest_client_*` metrics). */
export interface RequestMetrics {
  /** One call per finished request: HTTP status code as a string (or `<error>`), method, host. */
  request(code: string, method: string, host: string, seconds: number): void;
}

/** How a `Transport` connects, identifies itself and paces its requests. */
export interface TransportOptions {
  /** Where to connect and how to authenticate. */
  readonly config: ConnectionConfig;
  /** Sent as User-Agent (default `opkit/<version>`). */
  readonly userAgent: string;
  /** Client-side rate limit: requests per second (default: none; when set, > 0). */
  readonly qps?: number;
  /** Burst for `qps` (default 2 × qps, at least 1; when set, >= 1). */
  readonly burst?: number;
  /** Deadline of non-watch requests, response body included (default 60 s). */
  readonly timeoutMs?: number;
  /** Where each finished request is reported. */
  readonly metrics?: RequestMetrics;
  /** The `fieldValidation` of every POST, PUT and PATCH that names none (default: none, the apiserver's `Warn`). */
  readonly fieldValidation?: FieldValidation;
  /** Hears each warning the apiserver answers with (client/warnings.ts). */
  readonly onWarning?: WarningHandler;
}

/** The HTTP methods the client sends. */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** The methods that write an object, and take `fieldValidation`. */
const WRITES: ReadonlySet<Method> = new Set(['POST', 'PUT', 'PATCH']);

/** One request to the apiserver. */
export interface TransportRequest {
  /** The HTTP method. */
  readonly method: Method;
  /** The path below the server URL (`/api/v1/namespaces/ns/pods`). */
  readonly path: string;
  /** Query parameters; `undefined` values are left out. */
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  /** The body: a string as is, anything else as JSON. */
  readonly body?: unknown;
  /** The Content-Type of the body (default `application/json`). */
  readonly contentType?: string;
  /** The Accept header (default `application/json`). */
  readonly accept?: string | undefined;
  /** Aborts the request (`Aborted`). */
  readonly signal?: AbortSignal | undefined;
  /** A second signal that also aborts the request (a client's bound signal). */
  readonly bound?: AbortSignal | undefined;
  /**
   * Asked right before each exchange is handed to the socket (every attempt, retries included): throws to refuse it,
   * and the request fails with `Aborted` (its `cause`: what the guard threw). A client's fence (`Client.withGuard`).
   */
  readonly guard?: (() => void) | undefined;
  /** This request's deadline, instead of the transport's. */
  readonly timeoutMs?: number;
  /** The fields a protobuf answer is decoded with (default: all). A JSON answer is parsed whole. */
  readonly mask?: FieldMask | undefined;
  /** A write's object: where to read it in JSON when the write's 2xx answer is protobuf this client cannot decode. */
  readonly readBack?: string | undefined;
}

/** What one exchange sends: the URL, headers, TLS options and payload of a request. */
interface Exchange {
  readonly url: URL;
  readonly payload: string | undefined;
  readonly headers: Record<string, string | string[]>;
  readonly tls: SecureContextOptions & { rejectUnauthorized?: boolean; servername?: string };
}

/** `METHOD path`, as errors and messages name a request. */
function describeOf(req: TransportRequest): string {
  return `${req.method} ${req.path}`;
}

/**
 * HTTP(S) to one apiserver: JSON requests with a deadline and retries, and streaming GETs for watches. See the module
 * comment for its guarantees.
 */
export class Transport {
  /** The apiserver's URL. */
  readonly server: URL;
  readonly #options: TransportOptions;
  readonly #impersonation: Readonly<Record<string, string | string[]>>;
  readonly #pools: ConnectionPools;
  readonly #bucket: TokenBucket | undefined;

  /** @throws UsageError (`InvalidArgument`) when `qps` is set and not > 0, or `burst` is not >= 1. */
  constructor(options: TransportOptions) {
    this.#options = options;
    this.server = new URL(options.config.server);
    this.#impersonation = impersonationHeaders(options.config.impersonate);
    this.#pools = new ConnectionPools(this.server, options.config.proxyUrl);
    this.#bucket = options.qps
      ? new TokenBucket(
          options.qps,
          options.burst ?? Math.max(1, options.qps * 2),
          () => performance.now(),
          'Client (qps, burst)',
        )
      : undefined;
  }

  /** A JSON request; resolves with the parsed body of a 2xx answer, rejects with an ApiError otherwise. */
  async request<T>(req: TransportRequest): Promise<T> {
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs ?? 60_000;
    const describe = describeOf(req);
    const cut = linked([req.signal, req.bound], (reason) => aborted(describe, reason));
    const timer = setTimeout(() => {
      cut.abort(new ApiError('Timeout', `${describe}: no full answer within ${timeoutMs} ms`, { request: describe }));
    }, timeoutMs);
    const span = startRequestSpan(req.method, req.path, this.server);
    try {
      const body = await this.#attempts<T>(req, cut.signal, span);
      if (span) endRequestSpan(span);
      return body;
    } catch (err) {
      if (span) endRequestSpan(span, { failed: true, error: err });
      throw err;
    } finally {
      clearTimeout(timer);
      cut.dispose();
    }
  }

  async #attempts<T>(request: TransportRequest, signal: AbortSignal, span: Span | undefined): Promise<T> {
    const describe = describeOf(request);
    let req = request;
    let unauthorizedRetried = false;
    let sent = 0;
    for (let retry = 0; ; retry++) {
      let res: IncomingMessage;
      let body: Buffer;
      if (sent > 0) span?.setAttribute(ATTR.resendCount, sent);
      sent += 1;
      try {
        res = await this.#send(req, signal, retry);
        body = await readBody(res, describe, signal);
      } catch (err) {
        const delay = droppedRetryDelayMs(req.method, retry, err);
        if (delay === undefined) throw err;
        await pause(delay, signal, describe);
        continue;
      }
      const status = res.statusCode ?? 0;
      span?.setAttribute(ATTR.statusCode, status);
      if (status >= 200 && status < 300) {
        try {
          return parseBody<T>(res, body, req.mask);
        } catch (err) {
          // a protobuf body this client cannot read: the same GET once more in JSON, or a write's object read back
          if (!(err instanceof ApiError) || err.code !== 'Malformed' || !req.accept?.startsWith(PROTOBUF)) throw err;
          if (req.method === 'GET') req = { ...req, accept: 'application/json', mask: undefined };
          else if (req.readBack !== undefined) {
            const { signal: own, bound, guard } = req;
            req = { method: 'GET', path: req.readBack, accept: 'application/json', signal: own, bound, guard };
          } else throw err;
          retry -= 1;
          continue;
        }
      }
      const err = errorAnswer(res, body, describe);
      if (status === 401 && !unauthorizedRetried) {
        unauthorizedRetried = true;
        this.#options.config.auth.invalidate();
        retry -= 1;
        continue;
      }
      const delay = answerRetryDelayMs(status, retry, err);
      if (delay === undefined) throw err;
      await pause(delay, signal, describe);
    }
  }

  /**
   * A streaming GET (watch): resolves with the response once a 200 arrives, for the caller to read; rejects with an
   * ApiError otherwise. No deadline: the caller's signal ends it.
   */
  async stream(req: Omit<TransportRequest, 'method' | 'body' | 'contentType'>): Promise<IncomingMessage> {
    const full: TransportRequest = { ...req, method: 'GET' };
    const describe = describeOf(full);
    const cut = linked([req.signal, req.bound], (reason) => aborted(describe, reason));
    let handedOff = false;
    try {
      for (let attempt = 0; ; attempt++) {
        const res = await this.#send(full, cut.signal, attempt);
        if (res.statusCode === 200) {
          // the caller reads on: the links go when the response does
          res.once('close', () => cut.dispose());
          handedOff = true;
          return res;
        }
        const err = errorAnswer(res, await readBody(res, describe, cut.signal), describe);
        if (res.statusCode === 401 && attempt === 0) {
          this.#options.config.auth.invalidate();
          continue;
        }
        throw err;
      }
    } finally {
      if (!handedOff) cut.dispose();
    }
  }

  /** Closes every connection (requests still under way fail). */
  close(): void {
    this.#pools.close();
  }

  /** Sends the request; resolves with the response once its headers arrive. `signal` cuts it off. */
  async #send(req: TransportRequest, signal: AbortSignal | undefined, attempt: number): Promise<IncomingMessage> {
    const describe = describeOf(req);
    const failure = (err: unknown): ApiError => {
      if (signal?.aborted) return cutOff(describe, signal);
      if (err instanceof ApiError) return err;
      const message = err instanceof Error ? err.message : String(err);
      return new ApiError('Network', `${describe}: ${message}${attempt > 0 ? ` (attempt ${attempt + 1})` : ''}`, {
        request: describe,
        cause: err,
      });
    };
    try {
      if (this.#bucket) await this.#bucket.take(signal);
      const lease = await this.#pools.leaser();
      const creds = await this.#options.config.auth.credentials();
      if (signal?.aborted) throw signal.reason;
      try {
        req.guard?.();
      } catch (reason) {
        throw aborted(describe, reason);
      }
      const exchange = this.#prepare(req, creds);
      return await this.#dispatch(req, exchange, lease(creds.cert), signal);
    } catch (err) {
      throw failure(err);
    }
  }

  /** The URL, headers, TLS options and payload of one exchange. */
  #prepare(req: TransportRequest, creds: Credentials): Exchange {
    const cfg = this.#options.config;
    const url = new URL(this.server.href.replace(/\/$/, '') + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const validation = this.#options.fieldValidation;
    if (validation && WRITES.has(req.method) && !url.searchParams.has('fieldValidation'))
      url.searchParams.set('fieldValidation', validation);
    const payload =
      req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    const headers: Record<string, string | string[]> = {
      accept: req.accept ?? 'application/json',
      'user-agent': this.#options.userAgent,
      ...this.#impersonation,
      ...creds.headers,
    };
    if (payload !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const tls =
      this.server.protocol === 'https:'
        ? {
            ...(cfg.ca !== undefined ? { ca: cfg.ca } : {}),
            ...(cfg.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
            ...(cfg.tlsServerName ? { servername: cfg.tlsServerName } : {}),
            ...(creds.cert !== undefined ? { cert: creds.cert } : {}),
            ...(creds.key !== undefined ? { key: creds.key } : {}),
          }
        : {};
    return { url, payload, headers, tls };
  }

  /** One exchange on `lease`'s connection, released when the response closes (or the request fails). */
  #dispatch(
    req: TransportRequest,
    { url, payload, headers, tls }: Exchange,
    lease: Lease,
    signal: AbortSignal | undefined,
  ): Promise<IncomingMessage> {
    const started = performance.now();
    const send = this.server.protocol === 'http:' ? http.request : httpsRequest;
    const metrics = this.#options.metrics;
    const host = this.server.host;
    return new Promise<IncomingMessage>((resolve, reject) => {
      let r: ReturnType<typeof send>;
      try {
        r = send(
          url,
          { method: req.method, agent: lease.agent, headers, ...tls, ...(signal ? { signal } : {}) },
          (res) => {
            metrics?.request(String(res.statusCode ?? 0), req.method, host, (performance.now() - started) / 1000);
            if (this.#options.onWarning) reportWarnings(res, this.#options.onWarning, describeOf(req));
            res.once('close', lease.release);
            resolve(res);
          },
        );
      } catch (err) {
        // e.g. a header value Node refuses: nothing was sent
        lease.release();
        reject(err);
        return;
      }
      const out = r;
      const write = () => {
        if (payload !== undefined) out.write(payload);
        out.end();
      };
      r.once('socket', (socket) => {
        socket.setKeepAlive(true, KEEPALIVE_MS);
        if (!req.guard) return;
        // a guarded request goes out only once its connection is ready (TCP and TLS), its guard asked right then: a
        // process paused between the guard's first check and a new connection's handshake sends nothing stale
        const ready = () => {
          try {
            req.guard?.();
          } catch (reason) {
            out.destroy(aborted(describeOf(req), reason));
            return;
          }
          write();
        };
        if (!socket.connecting) ready();
        else socket.once('encrypted' in socket && socket.encrypted ? 'secureConnect' : 'connect', ready);
      });
      r.on('error', (err) => {
        lease.release();
        metrics?.request('<error>', req.method, host, (performance.now() - started) / 1000);
        reject(err);
      });
      if (!req.guard) write();
    });
  }
}
