/**
 * @module manager/metricsauth
 * Who may scrape `/metrics`: the filter controller-runtime's `filters.WithAuthenticationAndAuthorization` applies,
 * with the apiserver deciding.
 *
 * Guarantees:
 * - A request without a bearer token is refused with 401 and never reaches the apiserver.
 * - A token is authenticated with a TokenReview; one the apiserver does not accept is refused with 401.
 * - The authenticated user's right to the request (`get` on the non-resource URL, e.g. `/metrics`) is checked with a
 *   SubjectAccessReview carrying the user's name, uid, groups and extra; a user without it is refused with 403.
 * - Answers are cached, keyed by the token's SHA-256 (the token itself is never kept): an accepted token for
 *   `authenticationTtlMs` (1 min), a refused one for `denyTtlMs` (30 s), an allowed decision for `allowTtlMs` (5 min),
 *   a denied one for `denyTtlMs` — controller-runtime's delegating defaults. Concurrent scrapes with the same token
 *   share one review. Each cache holds at most `maxEntries` answers; the oldest go first.
 * - Refusals carry fixed texts, as controller-runtime's: 401 `Unauthorized`, 403 naming the user and the path, 500
 *   `Internal Server Error` (the TokenReview failed) or `Authorization for user <name> failed` (the
 *   SubjectAccessReview failed). Why — the TokenReview's error, the apiserver's answer, which may name the operator's
 *   ServiceAccount — goes to the log only.
 * - A review is shared work, not the first scraper's: it runs under its own deadline, `reviewTimeoutMs` (10 s, its
 *   retries included), and each scraper stops waiting on its own signal — one that disconnects is answered at once,
 *   and the review goes on for the others, its answer cached (the apiserver's cached token authenticator detaches its
 *   shared lookups the same way). Reviews under way end when `signal` (the metrics server's stop) aborts.
 * - A review that fails transiently is tried again, as controller-runtime's `filters.go` configures the apiserver's
 *   delegating authenticator and authorizer, and each failure is retried by one layer only:
 *   - an answer that says when to come back (429 TooManyRequests, or 500–504 with a Retry-After) is retried by the
 *     client's transport, 3 more times after the delay asked for (client/transport.ts), and not again here: a
 *     throttled review makes at most 4 requests;
 *   - the other failures its webhook client retries — a dropped connection (reset, refused), 500 InternalError, 504
 *     Timeout — which the transport does not retry for a POST, are tried again here: at most 5 tries, 500 ms apart
 *     × 1.5 per retry, 20 % jitter.
 *   Other failures (403: the operator lacks `create` on tokenreviews or subjectaccessreviews) are not retried.
 * - A review that still fails (or has no answer within `reviewTimeoutMs`) answers 500, is logged, and is not cached.
 *
 * The operator needs `create` on `tokenreviews` (authentication.k8s.io) and `subjectaccessreviews`
 * (authorization.k8s.io); see `metricsAuthPermissions` in helpers/rbac.ts.
 */
import { createHash } from 'node:crypto';
import { type SubjectAccessReview, SubjectAccessReviews, type TokenReview, TokenReviews } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { ApiError } from '../client/errors.ts';
import { OpkitError } from '../errors.ts';
import { Backoff } from '../internal/backoff.ts';
import { isDroppedConnection, linked, saysWhenToRetry } from '../internal/requests.ts';
import { nodeTimers, sleep, type TimerSource } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';

/** Why a scrape of the secure metrics endpoint could not be decided, or the endpoint could not be served. */
export type MetricsAuthErrorCode =
  /** A TokenReview or SubjectAccessReview failed after its retries (the request's error is the `cause`): a 500. */
  | 'ReviewFailed'
  /** The metrics serving certificate could not be read, or its key is not the certificate's: the message names the file. */
  | 'CertificateUnreadable';

/** Tries per review, and the waits between them: the apiserver's `DefaultAuthWebhookRetryBackoff`. */
const REVIEW_TRIES = 5;
const REVIEW_BACKOFF = { initialMs: 500, factor: 1.5, jitter: 0.2 } as const;

/**
 * A scrape of the secure metrics endpoint that could not be authenticated or authorized: a review request failed after
 * its retries (`ReviewFailed`), or the serving certificate could not be read (`CertificateUnreadable`). A scraper that
 * leaves first is not an error of its own: the wait for its review rejects with the reason of its signal.
 */
export class MetricsAuthError extends OpkitError<MetricsAuthErrorCode> {
  override readonly name = 'MetricsAuthError';
}

export interface ScrapeAuthOptions {
  /** The operator's client: its identity creates the reviews. */
  readonly client: Client;
  readonly log?: Logger;
  /** How long an accepted token stays authenticated (default 1 min). */
  readonly authenticationTtlMs?: number;
  /** How long an allowed decision is kept (default 5 min). */
  readonly allowTtlMs?: number;
  /** How long a refused token or a denied decision is kept (default 30 s). */
  readonly denyTtlMs?: number;
  /** Answers kept per cache (default 4096). */
  readonly maxEntries?: number;
  /** How long one TokenReview or SubjectAccessReview may take, retries included (default 10 s, as controller-runtime). */
  readonly reviewTimeoutMs?: number;
  /** Aborts the reviews under way (the metrics server's stop). */
  readonly signal?: AbortSignal;
  /** Milliseconds, monotonic; injectable for tests. */
  readonly now?: () => number;
  /** Timers of the waits between retries; injectable for tests. */
  readonly timers?: TimerSource;
  /** The backoff's jitter source (0 … 1); injectable for tests. */
  readonly random?: () => number;
}

export interface ScrapeRequest {
  /** The `Authorization` header, if any. */
  readonly authorization: string | undefined;
  /** The URL path asked for, e.g. `/metrics`. */
  readonly path: string;
  /** The HTTP method, e.g. `GET` (checked as the lower-case verb, as the apiserver does for non-resource URLs). */
  readonly method: string;
}

export type ScrapeDecision =
  | { readonly allowed: true; readonly user: string }
  | { readonly allowed: false; readonly status: 401 | 403 | 500; readonly message: string };

interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: string[];
  readonly extra?: Record<string, string[]>;
}

type Authn = { readonly ok: true; readonly user: UserInfo } | { readonly ok: false; readonly message: string };
type Authz = { readonly allowed: boolean; readonly reason: string };

/** Decides each scrape by TokenReview and SubjectAccessReview, with short-lived caches of both answers. */
export class ScrapeAuthorizer {
  readonly #client: Client;
  readonly #log: Logger | undefined;
  readonly #authn: TtlCache<Authn>;
  readonly #authz: TtlCache<Authz>;
  readonly #ttl: { authn: number; allow: number; deny: number };
  readonly #reviewTimeoutMs: number;
  readonly #stop: AbortSignal | undefined;
  readonly #timers: TimerSource;
  readonly #random: (() => number) | undefined;

  constructor(options: ScrapeAuthOptions) {
    this.#client = options.client;
    this.#log = options.log;
    const now = options.now ?? (() => performance.now());
    const max = options.maxEntries ?? 4096;
    this.#authn = new TtlCache(max, now);
    this.#authz = new TtlCache(max, now);
    this.#ttl = {
      authn: options.authenticationTtlMs ?? 60_000,
      allow: options.allowTtlMs ?? 300_000,
      deny: options.denyTtlMs ?? 30_000,
    };
    this.#reviewTimeoutMs = options.reviewTimeoutMs ?? 10_000;
    this.#stop = options.signal;
    this.#timers = options.timers ?? nodeTimers;
    this.#random = options.random;
  }

  /**
   * Decides one scrape. `signal` is the scraper's: when it disconnects, this call stops waiting and answers at once
   * (500; nobody reads it), while a review under way goes on for the other scrapers that share it. Answers carry fixed
   * texts; why a token was refused or a review failed goes to the log only.
   */
  async authorize(req: ScrapeRequest, signal?: AbortSignal): Promise<ScrapeDecision> {
    const token = bearerToken(req.authorization);
    if (!token) return UNAUTHORIZED;
    const tokenKey = createHash('sha256').update(token).digest('hex');
    const verb = req.method.toLowerCase();
    let authn: Authn;
    try {
      authn = await this.#authn.getOrLoad(
        tokenKey,
        () =>
          this.#shared('TokenReview', async (reviewSignal) => {
            const a = await this.#review(token, reviewSignal);
            return { value: a, ttlMs: a.ok ? this.#ttl.authn : this.#ttl.deny };
          }),
        signal,
      );
    } catch (err) {
      this.#failed(err, req, signal);
      return { allowed: false, status: 500, message: 'Internal Server Error' };
    }
    if (!authn.ok) {
      this.#log?.debug({ reason: authn.message, path: req.path }, 'metrics scrape refused: the token was not accepted');
      return UNAUTHORIZED;
    }
    const user = authn.user;
    let authz: Authz;
    try {
      authz = await this.#authz.getOrLoad(
        `${tokenKey} ${verb} ${req.path}`,
        () =>
          this.#shared('SubjectAccessReview', async (reviewSignal) => {
            const a = await this.#access(user, verb, req.path, reviewSignal);
            return { value: a, ttlMs: a.allowed ? this.#ttl.allow : this.#ttl.deny };
          }),
        signal,
      );
    } catch (err) {
      this.#failed(err, req, signal);
      return { allowed: false, status: 500, message: `Authorization for user ${user.username} failed` };
    }
    if (!authz.allowed) {
      this.#log?.debug(
        { user: user.username, reason: authz.reason, path: req.path },
        'metrics scrape refused: not authorized',
      );
      return {
        allowed: false,
        status: 403,
        message: `Forbidden: user "${user.username}" cannot ${verb} path "${req.path}"`,
      };
    }
    return { allowed: true, user: user.username };
  }

  #failed(err: unknown, req: ScrapeRequest, signal: AbortSignal | undefined): void {
    const message = err instanceof Error ? err.message : String(err);
    if (signal?.aborted)
      this.#log?.debug({ err: message, path: req.path }, 'metrics scraper went away during its review');
    else this.#log?.error({ err: message, path: req.path }, 'cannot authorize a metrics scrape');
  }

  /**
   * Runs `review` as shared work: under its own signal — aborted after `reviewTimeoutMs` or when the authorizer's
   * `signal` does, never by a scraper — and tried again on transient failures (see the module comment).
   */
  async #shared<R>(what: string, review: (signal: AbortSignal) => Promise<R>): Promise<R> {
    const timeout = AbortSignal.timeout(this.#reviewTimeoutMs);
    const ctl = linked([timeout, this.#stop], (cause, source) =>
      source === timeout
        ? new MetricsAuthError('ReviewFailed', `${what}: no answer within ${this.#reviewTimeoutMs} ms`)
        : cause,
    );
    const backoff = new Backoff({ ...REVIEW_BACKOFF, ...(this.#random ? { random: this.#random } : {}) });
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await review(ctl.signal);
        } catch (err) {
          if (attempt >= REVIEW_TRIES || ctl.signal.aborted || !retryableReview(err)) throw err;
          const delayMs = backoff.next();
          this.#log?.debug({ err: describe(err), attempt, retryInMs: delayMs }, `${what} failed; trying again`);
          await sleep(delayMs, ctl.signal, this.#timers);
          if (ctl.signal.aborted) throw err;
        }
      }
    } finally {
      ctl.dispose();
    }
  }

  async #review(token: string, signal: AbortSignal): Promise<Authn> {
    let review: TokenReview;
    try {
      review = await this.#client.create(TokenReviews, { metadata: {}, spec: { token } }, { signal });
    } catch (err) {
      throw new MetricsAuthError('ReviewFailed', `TokenReview failed: ${describe(err)}`, { cause: err });
    }
    const s = review.status;
    if (!s?.authenticated || !s.user?.username) {
      return { ok: false, message: s?.error ? `the token was not accepted: ${s.error}` : 'the token was not accepted' };
    }
    return {
      ok: true,
      user: {
        username: s.user.username,
        ...(s.user.uid ? { uid: s.user.uid } : {}),
        ...(s.user.groups ? { groups: s.user.groups } : {}),
        ...(s.user.extra ? { extra: s.user.extra } : {}),
      },
    };
  }

  async #access(user: UserInfo, verb: string, path: string, signal: AbortSignal): Promise<Authz> {
    let review: SubjectAccessReview;
    try {
      review = await this.#client.create(
        SubjectAccessReviews,
        {
          metadata: {},
          spec: {
            user: user.username,
            ...(user.uid ? { uid: user.uid } : {}),
            ...(user.groups ? { groups: user.groups } : {}),
            ...(user.extra ? { extra: user.extra } : {}),
            nonResourceAttributes: { path, verb },
          },
        },
        { signal },
      );
    } catch (err) {
      throw new MetricsAuthError('ReviewFailed', `SubjectAccessReview failed: ${describe(err)}`, { cause: err });
    }
    return { allowed: review.status?.allowed === true, reason: review.status?.reason ?? '' };
  }
}

const UNAUTHORIZED: ScrapeDecision = { allowed: false, status: 401, message: 'Unauthorized' };

/**
 * The failures the apiserver's webhook client retries (`DefaultShouldRetry`: a dropped connection, InternalError,
 * Timeout, TooManyRequests, an answer that says when to come back), less those the client's transport has retried
 * already (429, and 500–504 with a Retry-After). `err` is a `ReviewFailed` wrapping the request's.
 */
function retryableReview(err: unknown): boolean {
  const e = err instanceof MetricsAuthError ? err.cause : err;
  if (!(e instanceof ApiError)) return false;
  if (saysWhenToRetry(e.status, e.retryAfterSeconds)) return false; // retried by the transport, after its delay
  if (e.code === 'Network') return isDroppedConnection(e.cause);
  if (e.code === 'Aborted') return false;
  return (
    e.code === 'InternalError' ||
    e.code === 'Timeout' ||
    e.code === 'ServerTimeout' ||
    e.retryAfterSeconds !== undefined
  );
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), or undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const m = /^\s*bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1];
}

/**
 * Answers that expire: at most `max` entries (the oldest inserted are dropped first), and one load per key at a time,
 * shared by every caller that asks meanwhile; each caller can stop waiting on its own signal without ending the load.
 */
export class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; expires: number }>();
  readonly #loading = new Map<string, Promise<V>>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(max: number, now: () => number) {
    this.#max = max;
    this.#now = now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /**
   * The cached value of `key`, or the value `load` gives (cached for its `ttlMs`); a failed load is not cached. When
   * `signal` aborts first, this call rejects with `signal.reason` and the load goes on for the others.
   */
  getOrLoad(key: string, load: () => Promise<{ value: V; ttlMs: number }>, signal?: AbortSignal): Promise<V> {
    const hit = this.#entries.get(key);
    if (hit && hit.expires > this.#now()) return Promise.resolve(hit.value);
    if (hit) this.#entries.delete(key);
    let pending = this.#loading.get(key);
    if (!pending) {
      const p = load().then(({ value, ttlMs }) => {
        this.#entries.set(key, { value, expires: this.#now() + ttlMs });
        while (this.#entries.size > this.#max) {
          const oldest = this.#entries.keys().next().value as string;
          this.#entries.delete(oldest);
        }
        return value;
      });
      this.#loading.set(key, p);
      // the load settles once, whoever still waits for it (a rejection nobody waits for is not unhandled)
      const settled = () => {
        if (this.#loading.get(key) === p) this.#loading.delete(key);
      };
      p.then(settled, settled);
      pending = p;
    }
    return signal ? untilAborted(pending, signal) : pending;
  }
}

/** `p`, or a rejection with `signal.reason` as soon as `signal` aborts; no listener stays on `signal` once either happened. */
function untilAborted<V>(p: Promise<V>, signal: AbortSignal): Promise<V> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<V>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
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
