/**
 * @module api
 * A minimal HTTPS client for the environment's own needs (readiness probes, fake nodes, token requests) and for
 * tests that need a raw view of the API. It is not the opkit client (that is @opkit/runtime): no retries, no typing
 * beyond JSON. Each request has a timeout; a non-2xx answer is returned, not thrown, so callers can assert on 403s.
 */
import { Agent, request as httpsRequest } from 'node:https';
import { TestenvError } from './errors.ts';
import type { Credentials } from './kubeconfig.ts';

/** An answer, whatever its status. */
export interface ApiResponse<T = unknown> {
  /** The HTTP status. */
  readonly status: number;
  /** The body parsed as JSON when it is JSON, else the text. */
  readonly body: T;
  /** The body as text. */
  readonly text: string;
}

/** One event of a watch: `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR` (a Status, e.g. 410 Gone). */
export interface WatchEvent {
  /** What happened. */
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  /** The object after the change (a deleted one's last state); for `ERROR`, a Status. */
  readonly object: { readonly metadata?: { readonly resourceVersion?: string }; readonly [key: string]: unknown };
}

/** One request of an `ApiClient`. */
export interface ApiRequest {
  /** The HTTP method (default GET). */
  readonly method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path and query, e.g. `/api/v1/namespaces/default/pods?limit=1`. */
  readonly path: string;
  /** A body, sent as JSON. */
  readonly body?: unknown;
  /** Content type for PATCH (default merge patch). */
  readonly contentType?: string;
  /** Longest wait for the answer (default 10 s); then the request fails with `ApiRequestFailed`. */
  readonly timeoutMs?: number;
}

/**
 * A minimal HTTPS client of one apiserver, for tests that want the raw API: answers of any status are returned, not
 * thrown (assert on a 403); only a request that gets no answer throws `ApiRequestFailed`.
 */
export class ApiClient {
  /** The apiserver's URL (`https://127.0.0.1:<port>`). */
  readonly server: string;
  readonly #agent: Agent;
  readonly #token: string | undefined;

  constructor(server: string, caPem: string, credentials?: Credentials) {
    this.server = server;
    this.#agent = new Agent({
      keepAlive: true,
      ca: caPem,
      ...(credentials?.kind === 'certificate' ? { cert: credentials.certPem, key: credentials.keyPem } : {}),
    });
    this.#token = credentials?.kind === 'token' ? credentials.token : undefined;
  }

  /**
   * Sends `req` and resolves to the answer, whatever its status; rejects with `TestenvError` `ApiRequestFailed` when
   * there is none.
   */
  request<T = unknown>(req: ApiRequest): Promise<ApiResponse<T>> {
    const method = req.method ?? 'GET';
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    const url = new URL(req.path, this.server);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'opkit-testenv' };
    if (payload !== undefined) {
      headers['content-type'] =
        method === 'PATCH' ? (req.contentType ?? 'application/merge-patch+json') : 'application/json';
      // Node frames a body of DELETE only by its length (no chunked encoding by default): without it, the body would
      // be read as the start of the next request on the kept-alive connection
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    return new Promise((resolve, reject) => {
      const failed = (err: Error) =>
        reject(
          new TestenvError('ApiRequestFailed', `${method} ${url.pathname} failed: ${err.message}`, { cause: err }),
        );
      const r = httpsRequest(url, { method, agent: this.#agent, headers, timeout: req.timeoutMs ?? 10_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', failed);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json')) {
            try {
              body = JSON.parse(text);
            } catch {
              body = text;
            }
          }
          resolve({ status: res.statusCode ?? 0, body: body as T, text });
        });
      });
      r.on('timeout', () =>
        r.destroy(new TestenvError('ApiRequestFailed', `no answer within ${req.timeoutMs ?? 10_000} ms`)),
      );
      r.on('error', failed);
      if (payload !== undefined) r.write(payload);
      r.end();
    });
  }

  /**
   * Watches `path` (a watch URL, `?watch=1&resourceVersion=…`): calls `onEvent` with each event as it arrives; resolves
   * when the apiserver ends the stream or `signal` aborts; rejects with `ApiRequestFailed` when the answer is not 200
   * (its status and text in the message), the connection fails or `onEvent` throws (its error the cause). With
   * `unref`, the open watch does not keep the process alive (as the environment's own watch of the CRDs).
   */
  watch(
    path: string,
    onEvent: (event: WatchEvent) => void,
    options: { readonly signal: AbortSignal; readonly unref?: boolean },
  ): Promise<void> {
    const { signal } = options;
    const url = new URL(path, this.server);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'opkit-testenv' };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    return new Promise((resolve, reject) => {
      const failed = (why: string, cause?: unknown) =>
        signal.aborted
          ? resolve()
          : reject(new TestenvError('ApiRequestFailed', `watch ${url.pathname} failed: ${why}`, { cause }));
      const r = httpsRequest(url, { agent: this.#agent, headers, signal }, (res) => {
        res.on('error', (err) => failed(err.message, err));
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            failed(`answered ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`),
          );
          return;
        }
        let rest = '';
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          const lines = (rest + text).split('\n');
          rest = lines.pop() ?? '';
          try {
            for (const line of lines) if (line.trim() !== '') onEvent(JSON.parse(line) as WatchEvent);
          } catch (err) {
            failed(err instanceof Error ? err.message : String(err), err);
            r.destroy();
          }
        });
        res.on('end', () => resolve());
      });
      if (options.unref) r.on('socket', (socket) => socket.unref());
      r.on('error', (err) => failed(err.message, err));
      r.end();
    });
  }

  /** Like `request`, but throws an ApiRequestFailed error unless the status is 2xx. */
  async must<T = unknown>(req: ApiRequest): Promise<T> {
    const res = await this.request<T>(req);
    if (res.status < 200 || res.status > 299) {
      throw new TestenvError(
        'ApiRequestFailed',
        `${req.method ?? 'GET'} ${req.path} answered ${res.status}: ${res.text.slice(0, 500)}`,
      );
    }
    return res.body;
  }

  /** Closes its connections. */
  close(): void {
    this.#agent.destroy();
  }
}
