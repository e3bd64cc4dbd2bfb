/**
 * @module client/transport
 * HTTP(S) to one apiserver: one keep-alive agent per cluster (renewed only when the client certificate rotates),
 * credentials from the kubeconfig's authenticator (a 401 invalidates them and the request is tried once more), a user
 * agent, an optional client-side token bucket (off by default), a deadline on every non-watch request, and a hook for
 * request metrics. Throttled answers (429, or 503 with Retry-After) are retried up to 3 times after the delay the
 * server asks for (at most 10 s each); every other failure becomes an `ApiError`.
 *
 * Bodies are parsed with one `JSON.parse` per response; list callers page with `limit`/`continue`, so no response
 * becomes a string anywhere near V8's maximum string length.
 */
import type { IncomingMessage } from 'node:http';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from './errors.ts';
import type { ConnectionConfig, Credentials } from './kubeconfig.ts';

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
  /** Deadline of non-watch requests (default 60 s). */
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
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export class Transport {
  readonly server: URL;
  readonly #options: TransportOptions;
  #agent: HttpsAgent | HttpAgent;
  #agentCert: string | undefined;
  readonly #bucket: TokenBucket | undefined;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.server = new URL(options.config.server);
    this.#agent = this.#newAgent(undefined);
    this.#bucket = options.qps
      ? new TokenBucket(options.qps, options.burst ?? Math.max(1, options.qps * 2))
      : undefined;
  }

  /** A JSON request; resolves with the parsed body of a 2xx answer, rejects with an ApiError otherwise. */
  async request<T>(req: TransportRequest): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.#send(req, false, attempt);
      const text = await readBody(res);
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) return (text.length > 0 ? JSON.parse(text) : undefined) as T;
      const err = ApiError.fromResponse(
        status,
        parseMaybe(text),
        `${req.method} ${req.path}`,
        header(res, 'retry-after'),
      );
      if (status === 401 && attempt === 0) {
        this.#options.config.auth.invalidate();
        continue;
      }
      const throttled = status === 429 || (status === 503 && err.retryAfterSeconds !== undefined);
      if (throttled && attempt < 3) {
        await sleep(Math.min(10, err.retryAfterSeconds ?? 1) * 1000, undefined, { signal: req.signal });
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
    for (let attempt = 0; ; attempt++) {
      const res = await this.#send({ ...req, method: 'GET' }, true, attempt);
      if (res.statusCode === 200) return res;
      const text = await readBody(res);
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
  }

  close(): void {
    this.#agent.destroy();
  }

  #newAgent(creds: Credentials | undefined): HttpsAgent | HttpAgent {
    const cfg = this.#options.config;
    if (this.server.protocol === 'http:') return new HttpAgent({ keepAlive: true });
    return new HttpsAgent({
      keepAlive: true,
      ...(cfg.ca !== undefined ? { ca: cfg.ca } : {}),
      ...(cfg.insecureSkipTlsVerify ? { rejectUnauthorized: false } : {}),
      ...(cfg.tlsServerName ? { servername: cfg.tlsServerName } : {}),
      ...(creds?.cert !== undefined ? { cert: creds.cert } : {}),
      ...(creds?.key !== undefined ? { key: creds.key } : {}),
    });
  }

  async #send(req: TransportRequest, streaming: boolean, attempt: number): Promise<IncomingMessage> {
    if (this.#bucket) await this.#bucket.take(req.signal);
    const creds = await this.#options.config.auth.credentials();
    if (creds.cert !== this.#agentCert) {
      this.#agent.destroy();
      this.#agent = this.#newAgent(creds);
      this.#agentCert = creds.cert;
    }
    const url = new URL(this.server.href.replace(/\/$/, '') + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const payload =
      req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#options.userAgent,
      ...creds.headers,
    };
    if (payload !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const started = performance.now();
    const send = this.server.protocol === 'http:' ? httpRequest : httpsRequest;
    const timeoutMs = streaming ? undefined : (req.timeoutMs ?? this.#options.timeoutMs ?? 60_000);
    const describe = `${req.method} ${req.path}`;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const r = send(url, { method: req.method, agent: this.#agent, headers, signal: req.signal }, (res) => {
        this.#options.metrics?.request(
          String(res.statusCode ?? 0),
          req.method,
          this.server.host,
          (performance.now() - started) / 1000,
        );
        if (timer) clearTimeout(timer);
        resolve(res);
      });
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(
              () =>
                r.destroy(
                  new ApiError('Timeout', `${describe}: no answer within ${timeoutMs} ms`, { request: describe }),
                ),
              timeoutMs,
            );
      r.on('error', (err) => {
        if (timer) clearTimeout(timer);
        this.#options.metrics?.request('<error>', req.method, this.server.host, (performance.now() - started) / 1000);
        if (err instanceof ApiError) return reject(err);
        if (req.signal?.aborted) {
          return reject(
            new ApiError('Aborted', `${describe}: aborted`, { request: describe, cause: req.signal.reason }),
          );
        }
        reject(
          new ApiError('Network', `${describe}: ${err.message}${attempt > 0 ? ` (attempt ${attempt + 1})` : ''}`, {
            request: describe,
            cause: err,
          }),
        );
      });
      if (payload !== undefined) r.write(payload);
      r.end();
    });
  }
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

function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', (err) =>
      reject(new ApiError('Network', `reading the response failed: ${err.message}`, { cause: err })),
    );
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
    await sleep((-this.#tokens / this.#qps) * 1000, undefined, signal ? { signal } : undefined);
  }
}
