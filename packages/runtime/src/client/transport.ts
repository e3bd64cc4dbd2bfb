/**
 * @module client/transport
 * HTTP(S) to one apiserver: keep-alive connections, credentials from the kubeconfig's authenticator (a 401
 * invalidates them and the request is tried once more), impersonation headers, an HTTP(S) or SOCKS5 proxy when the
 * kubeconfig or the environment names one, a user agent, an optional client-side token bucket (off by default), and a
 * hook for request metrics.
 *
 * Guarantees:
 * - The deadline of a non-watch request (default 60 s) covers the whole request — every exchange, the response bodies
 *   and the waits between retries included: a body that stalls fails with `Timeout`, so no caller can hang on a
 *   half-sent answer. A watch (`stream`) has no deadline; its reader guards against silence (see client/watch.ts).
 * - Aborting the caller's signal (or the client's bound one) cuts the request off at once (`Aborted`), whatever stage
 *   it is in. Signals are followed with listeners removed when the request ends, so a signal that lives as long as a
 *   controller collects nothing per request.
 * - Connections send TCP keep-alive probes after 15 s of silence.
 * - Retries: an answer that says when to come back (429, or 500–504 with Retry-After) is retried up to 3 times after
 *   the delay asked for (at most 10 s each); a GET whose connection was reset or closed before the answer is retried
 *   up to 3 times with a short backoff (GETs are idempotent; writes are never replayed). Everything else becomes an
 *   `ApiError`. A caller that retries on its own (the metrics endpoint's reviews) leaves the first kind to this layer.
 * - A rotated client certificate moves new requests to a new connection pool; requests and watches already under
 *   way finish on the old one, which is closed once they have.
 *
 * Bodies are parsed with one `JSON.parse` per response; list callers page with `limit`/`continue`, so no response
 * becomes a string anywhere near V8's maximum string length.
 */
import type { Agent, IncomingMessage } from 'node:http';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isDroppedConnection, linked, saysWhenToRetry } from '../internal/requests.ts';
import { sleep } from '../internal/sleep.ts';
import { ATTR, endRequestSpan, type Span, startRequestSpan } from '../tracing/spans.ts';
import { ApiError } from './errors.ts';
import type { ConnectionConfig, Credentials, Impersonation } from './kubeconfig.ts';
import { proxyAgentFactory } from './proxy.ts';

export interface RequestMetrics {
  /** One call per finished request: HTTP status code as a string (or `<error>`), method, host. */
  request(code: string, method: string, host: string, seconds: number): void;
}

export interface TransportOptions {
  readonly config: ConnectionConfig;
  /** Sent as User-Agent (default `opkit/<version>`). */
  readonly userAgent: string;
  /** Client-side rate limit: requests per second (default: none). */
  readonly qps?: number;
  /** Burst for `qps` (default 2 × qps). */
  readonly burst?: number;
  /** Deadline of non-watch requests, response body included (default 60 s). */
  readonly timeoutMs?: number;
  readonly metrics?: RequestMetrics;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface TransportRequest {
  readonly method: Method;
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  readonly contentType?: string;
  /** The Accept header (default `application/json`). */
  readonly accept?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** A second signal that also aborts the request (a client's bound signal). */
  readonly bound?: AbortSignal | undefined;
  readonly timeoutMs?: number;
}

/** How many times a throttled answer or a reset GET is tried again. */
const MAX_RETRIES = 3;
/** The longest Retry-After honoured per retry. */
const MAX_RETRY_AFTER_MS = 10_000;
/** TCP keep-alive probes start after this much idle time on a connection. */
const KEEPALIVE_MS = 15_000;

/** One connection pool, with the client certificate it presents and the requests still using it. */
interface Pool {
  readonly agent: Agent;
  readonly cert: string | undefined;
  active: number;
  retired: boolean;
}

export class Transport {
  readonly server: URL;
  readonly #options: TransportOptions;
  readonly #impersonation: Readonly<Record<string, string | string[]>>;
  #pool: Pool | undefined;
  readonly #retired = new Set<Pool>();
  readonly #bucket: TokenBucket | undefined;
  /** Makes the agent of a new pool (a proxy's agent class is loaded once, before the first request). */
  readonly #agents: Promise<() => Agent>;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.server = new URL(options.config.server);
    this.#impersonation = impersonationHeaders(options.config.impersonate);
    const agentOptions = { keepAlive: true, keepAliveMsecs: KEEPALIVE_MS };
    const proxy = options.config.proxyUrl;
    this.#agents =
      proxy !== undefined
        ? proxyAgentFactory(proxy, agentOptions)
        : Promise.resolve(
            this.server.protocol === 'http:' ? () => new HttpAgent(agentOptions) : () => new HttpsAgent(agentOptions),
          );
    this.#agents.catch(() => {}); // reported by the first request
    this.#bucket = options.qps
      ? new TokenBucket(options.qps, options.burst ?? Math.max(1, options.qps * 2))
      : undefined;
  }

  /** A JSON request; resolves with the parsed body of a 2xx answer, rejects with an ApiError otherwise. */
  async request<T>(req: TransportRequest): Promise<T> {
    const timeoutMs = req.timeoutMs ?? this.#options.timeoutMs ?? 60_000;
    const describe = `${req.method} ${req.path}`;
    const cut = linked([req.signal, req.bound], (reason) => aborted(req, reason));
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

  async #attempts<T>(req: TransportRequest, signal: AbortSignal, span: Span | undefined): Promise<T> {
    let unauthorizedRetried = false;
    let sent = 0;
    for (let retry = 0; ; retry++) {
      let res: IncomingMessage;
      let text: string;
      if (sent > 0) span?.setAttribute(ATTR.resendCount, sent);
      sent += 1;
      try {
        res = await this.#send(req, signal, retry);
        text = await readBody(res, req, signal);
      } catch (err) {
        if (req.method === 'GET' && retry < MAX_RETRIES && isConnectionDropped(err)) {
          await cutOffSleep(100 * 2 ** retry * (1 + Math.random()), signal, req);
          continue;
        }
        throw err;
      }
      const status = res.statusCode ?? 0;
      span?.setAttribute(ATTR.statusCode, status);
      if (status >= 200 && status < 300) return (text.length > 0 ? JSON.parse(text) : undefined) as T;
      const err = ApiError.fromResponse(
        status,
        parseMaybe(text),
        `${req.method} ${req.path}`,
        header(res, 'retry-after'),
      );
      if (status === 401 && !unauthorizedRetried) {
        unauthorizedRetried = true;
        this.#options.config.auth.invalidate();
        retry -= 1;
        continue;
      }
      if (saysWhenToRetry(status, err.retryAfterSeconds) && retry < MAX_RETRIES) {
        await cutOffSleep(Math.min(MAX_RETRY_AFTER_MS, (err.retryAfterSeconds ?? 1) * 1000), signal, req);
        continue;
      }
      throw err;
    }
  }

  /**
   * A streaming GET (watch): resolves with the response once a 200 arrives, for the caller to read; rejects with an
   * ApiError otherwise. No deadline: the caller's signal ends it.
   */
  async stream(req: Omit<TransportRequest, 'method' | 'body' | 'contentType'>): Promise<IncomingMessage> {
    const full: TransportRequest = { ...req, method: 'GET' };
    const cut = linked([req.signal, req.bound], (reason) => aborted(full, reason));
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
        const text = await readBody(res, full, cut.signal);
        const err = ApiError.fromResponse(
          res.statusCode ?? 0,
          parseMaybe(text),
          `GET ${req.path}`,
          header(res, 'retry-after'),
        );
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
    this.#pool?.agent.destroy();
    this.#pool = undefined;
    for (const p of this.#retired) p.agent.destroy();
    this.#retired.clear();
  }

  /** The pool for these credentials; a pool with another certificate is retired (closed once idle). */
  #poolFor(creds: Credentials, newAgent: () => Agent): Pool {
    const current = this.#pool;
    if (current && current.cert === creds.cert) return current;
    if (current) {
      current.retired = true;
      if (current.active === 0) current.agent.destroy();
      else this.#retired.add(current);
    }
    const created: Pool = { agent: newAgent(), cert: creds.cert, active: 0, retired: false };
    this.#pool = created;
    return created;
  }

  #release(pool: Pool): void {
    pool.active -= 1;
    if (pool.retired && pool.active === 0) {
      pool.agent.destroy();
      this.#retired.delete(pool);
    }
  }

  /** Sends the request; resolves with the response once its headers arrive. `signal` cuts it off. */
  async #send(req: TransportRequest, signal: AbortSignal | undefined, attempt: number): Promise<IncomingMessage> {
    const describe = `${req.method} ${req.path}`;
    const failure = (err: unknown): ApiError => {
      if (signal?.aborted) return cutOff(req, signal);
      if (err instanceof ApiError) return err;
      const message = err instanceof Error ? err.message : String(err);
      return new ApiError('Network', `${describe}: ${message}${attempt > 0 ? ` (attempt ${attempt + 1})` : ''}`, {
        request: describe,
        cause: err,
      });
    };
    try {
      if (this.#bucket) await this.#bucket.take(signal);
      const newAgent = await this.#agents;
      const creds = await this.#options.config.auth.credentials();
      if (signal?.aborted) throw signal.reason;
      return await this.#dispatch(req, creds, this.#poolFor(creds, newAgent), signal);
    } catch (err) {
      throw failure(err);
    }
  }

  #dispatch(
    req: TransportRequest,
    creds: Credentials,
    pool: Pool,
    signal: AbortSignal | undefined,
  ): Promise<IncomingMessage> {
    const cfg = this.#options.config;
    const url = new URL(this.server.href.replace(/\/$/, '') + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
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
    const started = performance.now();
    const send = this.server.protocol === 'http:' ? httpRequest : httpsRequest;
    const metrics = this.#options.metrics;
    const host = this.server.host;
    pool.active += 1;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.#release(pool);
    };
    return new Promise<IncomingMessage>((resolve, reject) => {
      let r: ReturnType<typeof send>;
      try {
        r = send(
          url,
          { method: req.method, agent: pool.agent, headers, ...tls, ...(signal ? { signal } : {}) },
          (res) => {
            metrics?.request(String(res.statusCode ?? 0), req.method, host, (performance.now() - started) / 1000);
            res.once('close', release);
            resolve(res);
          },
        );
      } catch (err) {
        // e.g. a header value Node refuses: nothing was sent
        release();
        reject(err);
        return;
      }
      r.once('socket', (socket) => socket.setKeepAlive(true, KEEPALIVE_MS));
      r.on('error', (err) => {
        release();
        metrics?.request('<error>', req.method, host, (performance.now() - started) / 1000);
        reject(err);
      });
      if (payload !== undefined) r.write(payload);
      r.end();
    });
  }
}

/**
 * The Impersonate-* headers for a kubeconfig's `as`, `as-uid`, `as-groups` and `as-user-extra`. Values go on the wire
 * as UTF-8 bytes, as kubectl sends them (Node writes header strings as Latin-1, so they are given as such); an extra's
 * key is percent-encoded down to header-name characters.
 */
function impersonationHeaders(imp: Impersonation | undefined): Record<string, string | string[]> {
  if (!imp) return {};
  const bytes = (v: string) => Buffer.from(v, 'utf8').toString('latin1');
  const out: Record<string, string | string[]> = { 'impersonate-user': bytes(imp.user) };
  if (imp.uid) out['impersonate-uid'] = bytes(imp.uid);
  if (imp.groups && imp.groups.length > 0) out['impersonate-group'] = imp.groups.map(bytes);
  for (const [key, values] of Object.entries(imp.extra ?? {})) {
    if (values.length > 0) out[`impersonate-extra-${headerKey(key)}`] = values.map(bytes);
  }
  return out;
}

/** `key` lower-cased, with every byte outside [a-z0-9-_.~] percent-encoded (a valid HTTP header name). */
function headerKey(key: string): string {
  return [...Buffer.from(key.toLowerCase(), 'utf8')]
    .map((b) =>
      /[a-z0-9\-_.~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}

/** A connection that broke before any answer: worth one more try for an idempotent request. */
function isConnectionDropped(err: unknown): boolean {
  return err instanceof ApiError && err.code === 'Network' && isDroppedConnection(err.cause);
}

/** Waits `ms`; rejects as the request's cut-off signal says (Timeout or Aborted) as soon as it aborts. */
async function cutOffSleep(ms: number, signal: AbortSignal, req: TransportRequest): Promise<void> {
  await sleep(ms, signal);
  if (signal.aborted) throw cutOff(req, signal);
}

function header(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function parseMaybe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `Aborted`, for a request its caller aborted. */
function aborted(req: TransportRequest, reason: unknown): ApiError {
  const describe = `${req.method} ${req.path}`;
  return new ApiError('Aborted', `${describe}: aborted`, { request: describe, cause: reason });
}

/** The error of a request cut off by `signal`: its reason when that is an ApiError (the deadline), else `Aborted`. */
function cutOff(req: TransportRequest, signal: AbortSignal): ApiError {
  return signal.reason instanceof ApiError ? signal.reason : aborted(req, signal.reason);
}

/** The whole body as text (decoded once, after the last byte). Rejects as `signal` or the connection says. */
function readBody(res: IncomingMessage, req: TransportRequest, signal: AbortSignal | undefined): Promise<string> {
  const describe = `${req.method} ${req.path}`;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let settled = false;
    const fail = (err: unknown) => {
      if (settled) return;
      settled = true;
      if (signal?.aborted) reject(cutOff(req, signal));
      else
        reject(
          new ApiError('Network', `${describe}: reading the response failed: ${(err as Error).message}`, {
            request: describe,
            cause: err,
          }),
        );
    };
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
    res.on('error', fail);
    res.on('aborted', () => fail(new Error('the connection closed before the response ended')));
    res.on('close', () => {
      if (!res.complete) fail(new Error('the connection closed before the response ended'));
    });
  });
}

/** A token bucket that makes callers wait for a token (client-side rate limit). */
class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  #tokens: number;
  #last = performance.now();

  constructor(qps: number, burst: number) {
    this.#qps = qps;
    this.#burst = burst;
    this.#tokens = burst;
  }

  async take(signal?: AbortSignal): Promise<void> {
    const now = performance.now();
    this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) / 1000) * this.#qps);
    this.#last = now;
    this.#tokens -= 1;
    if (this.#tokens >= 0) return;
    const wait = (-this.#tokens / this.#qps) * 1000;
    if (!signal) await new Promise((resolve) => setTimeout(resolve, wait));
    else {
      await sleep(wait, signal);
      if (signal.aborted) throw signal.reason;
    }
  }
}
