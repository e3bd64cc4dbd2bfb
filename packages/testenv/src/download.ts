/**
 * @module download
 * Downloads one file over HTTP(S) into a temporary path and checks its digest.
 *
 * Guarantees:
 * - The file is written to the path the caller gives (a temporary name) and its SHA-256/SHA-512 is compared with the
 *   expected digest before this returns; on any failure the temporary file is removed. Callers rename it into place
 *   only after this succeeded, so a killed or failed download never leaves a file that is later trusted.
 * - `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (or their lower-case forms, which win, as in curl) of the given
 *   environment are honoured through undici's `EnvHttpProxyAgent`; the process environment is not consulted.
 * - Redirects are followed (GitHub answers a release download with a 302 to its asset host); headers the caller
 *   gives go with the first request, and `authorization` is dropped on a redirect to another origin (fetch's rule).
 * - Connecting, waiting for headers and each gap between body chunks are bounded by `stallMs`; a stalled, truncated
 *   or failed transfer (reset, timeout, 5xx, 408, 429) is retried up to `attempts` times with doubling backoff. Another
 *   4xx, or a host that cannot be reached at all (no DNS answer, connection refused, no route), is final at once. A
 *   used-up rate limit (403 or 429 with `x-ratelimit-remaining: 0`, or with `retry-after`, as GitHub's API answers)
 *   is final too, and says so: the limit, when it resets, and the caller's advice. A digest mismatch is final: the
 *   artifact itself is wrong, and retrying would not change it.
 * - Progress: on a TTY one line per file rewritten in place (bytes, total, rate); otherwise a line when a file starts
 *   and one when it is verified.
 * Errors: `DownloadFailed` (names the URL, status or cause and the attempts), `ChecksumMismatch` (the URL and both
 * digests), and the disk errors of `diskError`.
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { EnvHttpProxyAgent, fetch } from 'undici';
import { TestenvError } from './errors.ts';
import type { ChecksumAlgorithm } from './release.ts';

export interface DownloadSettings {
  /** Tries per file, the first included (default 4). */
  readonly attempts: number;
  /** Longest wait for a connection, the headers, or the next body chunk, in ms (default 30 s). */
  readonly stallMs: number;
  /** Delay before the first retry, in ms; doubles each time (default 1 s). */
  readonly backoffMs: number;
}

export const DEFAULT_DOWNLOAD_SETTINGS: DownloadSettings = { attempts: 4, stallMs: 30_000, backoffMs: 1_000 };

/** An HTTP client for one batch of downloads; `close()` releases its connections. */
export class Downloader {
  readonly #agent: EnvHttpProxyAgent;
  readonly #settings: DownloadSettings;
  readonly #log: (line: string) => void;
  readonly #tty: boolean;

  constructor(options: {
    env: NodeJS.ProcessEnv;
    settings?: Partial<DownloadSettings>;
    log: (line: string) => void;
    /** Rewrite one progress line in place on stderr (default: stderr is a TTY). */
    tty?: boolean;
  }) {
    const { env } = options;
    this.#settings = { ...DEFAULT_DOWNLOAD_SETTINGS, ...options.settings };
    this.#agent = new EnvHttpProxyAgent({
      httpProxy: env.http_proxy ?? env.HTTP_PROXY ?? '',
      httpsProxy: env.https_proxy ?? env.HTTPS_PROXY ?? '',
      noProxy: env.no_proxy ?? env.NO_PROXY ?? '',
      connectTimeout: this.#settings.stallMs,
      headersTimeout: this.#settings.stallMs,
      bodyTimeout: this.#settings.stallMs,
    });
    this.#log = options.log;
    this.#tty = options.tty ?? process.stderr.isTTY === true;
  }

  /**
   * A small text file (a checksum file, an API answer), at most 1 MiB. `headers` go with the request;
   * `rateLimitAdvice` ends the message when the server says its rate limit is used up.
   */
  async text(
    url: string,
    options: { headers?: Record<string, string>; rateLimitAdvice?: string } = {},
  ): Promise<string> {
    return this.#retrying(url, async () => {
      const res = await this.#get(url, options.headers, options.rateLimitAdvice);
      const body = Buffer.from(await res.arrayBuffer());
      if (body.length > 1 << 20)
        throw final(url, `is ${body.length} bytes, more than a checksum file or a release answer holds`);
      return body.toString('utf8');
    });
  }

  /**
   * Downloads `url` into `dest` and checks its digest against `expected` (lower-case hex; `source` says where that
   * digest was published, for the mismatch message). `label` names the file in progress lines. Returns the bytes
   * written.
   */
  async file(
    url: string,
    dest: string,
    expected: { algorithm: ChecksumAlgorithm; hex: string; source: string },
    label: string,
  ): Promise<number> {
    try {
      const { bytes, hex } = await this.#retrying(url, () => this.#attempt(url, dest, expected.algorithm, label));
      if (hex !== expected.hex) {
        throw new TestenvError(
          'ChecksumMismatch',
          `${url}: ${expected.algorithm} is ${hex}, but ${expected.source} says ${expected.hex}; ` +
            'nothing was cached. The file was damaged in transit or the mirror serves another build: retry, check ' +
            'OPKIT_DOWNLOAD_MIRROR, or build from source with OPKIT_TESTENV_SOURCE=go',
        );
      }
      return bytes;
    } catch (err) {
      await rm(dest, { force: true });
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  async #get(url: string, headers?: Record<string, string>, rateLimitAdvice?: string) {
    const res = await fetch(url, { dispatcher: this.#agent, redirect: 'follow', ...(headers ? { headers } : {}) });
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      const limited = rateLimited(res.status, res.headers, Date.now());
      if (limited) {
        throw final(url, `answered HTTP ${res.status}: ${limited}${rateLimitAdvice ? `. ${rateLimitAdvice}` : ''}`);
      }
      const retryable = res.status >= 500 || res.status === 408 || res.status === 429;
      const message = `${url} answered HTTP ${res.status} ${res.statusText}`.trim();
      throw retryable ? new TestenvError('DownloadFailed', message) : final(url, `answered HTTP ${res.status}`);
    }
    return res;
  }

  async #attempt(
    url: string,
    dest: string,
    algorithm: ChecksumAlgorithm,
    label: string,
  ): Promise<{ bytes: number; hex: string }> {
    const res = await this.#get(url);
    if (!res.body) throw new TestenvError('DownloadFailed', `${url} answered without a body`);
    const length = res.headers.get('content-length');
    const total = length ? Number(length) : undefined;
    const hash = createHash(algorithm);
    const progress = new Progress(label, total, this.#tty, this.#log);
    let bytes = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        bytes += chunk.length;
        progress.update(bytes);
        done(null, chunk);
      },
    });
    try {
      await pipeline(Readable.fromWeb(res.body), tap, createWriteStream(dest, { mode: 0o755 }));
    } catch (err) {
      progress.abort();
      const disk = diskError(err, dest);
      if (disk) throw disk;
      const of = total === undefined ? '' : ` of ${total}`;
      throw new TestenvError(
        'DownloadFailed',
        `${url}: cut off after ${bytes}${of} bytes (truncated): ${this.#describe(err)}`,
        { cause: err },
      );
    }
    if (total !== undefined && bytes !== total) {
      progress.abort();
      throw new TestenvError('DownloadFailed', `${url}: got ${bytes} of ${total} bytes (truncated)`);
    }
    progress.done(bytes);
    return { bytes, hex: hash.digest('hex') };
  }

  /** The cause of a failed transfer, with a stall named as such. */
  #describe(err: unknown): string {
    let e: unknown = err;
    while (e instanceof Error && e.cause instanceof Error) e = e.cause;
    const code = (e as NodeJS.ErrnoException | undefined)?.code ?? '';
    return /TIMEOUT/.test(code)
      ? `stalled: no data for ${this.#settings.stallMs / 1000} s (${code})`
      : describeCause(err);
  }

  async #retrying<T>(url: string, run: () => Promise<T>): Promise<T> {
    const { attempts, backoffMs } = this.#settings;
    let last: unknown;
    for (let i = 1; i <= attempts; i += 1) {
      try {
        return await run();
      } catch (caught) {
        const err = caught instanceof TestenvError ? caught : networkError(url, caught);
        if (err.code !== 'DownloadFailed' || isFinal(err)) throw err;
        last = err;
        if (i < attempts) {
          const delay = backoffMs * 2 ** (i - 1);
          this.#log(`${err.message}; retrying in ${(delay / 1000).toFixed(1)} s (attempt ${i + 1} of ${attempts})`);
          await sleep(delay);
        }
      }
    }
    throw new TestenvError('DownloadFailed', `${(last as Error).message}; gave up after ${attempts} attempts`, {
      cause: last,
    });
  }
}

/**
 * What a 403 or 429 says about a used-up rate limit, as GitHub's REST API answers one ("Rate limits for the REST
 * API"): `x-ratelimit-remaining: 0` (the primary limit, with `x-ratelimit-limit` and the reset time
 * `x-ratelimit-reset` in epoch seconds), or `retry-after` (a secondary limit). Undefined for any other answer.
 */
export function rateLimited(status: number, headers: Headers, now: number): string | undefined {
  if (status !== 403 && status !== 429) return undefined;
  const retryAfter = headers.get('retry-after');
  if (headers.get('x-ratelimit-remaining') === '0') {
    const limit = headers.get('x-ratelimit-limit');
    const reset = Number(headers.get('x-ratelimit-reset'));
    const of = limit ? ` of ${limit} requests an hour` : '';
    if (!Number.isFinite(reset) || reset <= 0) return `its rate limit${of} is used up (x-ratelimit-remaining: 0)`;
    const minutes = Math.max(1, Math.ceil((reset * 1000 - now) / 60_000));
    const at = new Date(reset * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
    return `its rate limit${of} is used up (x-ratelimit-remaining: 0) until ${at}, in ${minutes} min`;
  }
  if (retryAfter !== null) return `its secondary rate limit was hit: retry after ${retryAfter} s (retry-after)`;
  return undefined;
}

const FINAL = Symbol('final');

/** A failure that retrying cannot fix (a 404, an oversized checksum file). */
function final(url: string, what: string): TestenvError {
  return Object.assign(new TestenvError('DownloadFailed', `${url} ${what}`), { [FINAL]: true });
}

export function isFinal(err: TestenvError): boolean {
  return (err as TestenvError & { [FINAL]?: boolean })[FINAL] === true;
}

/** Errors that say the host cannot be reached at all: retrying within seconds does not help. */
const UNREACHABLE = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ENETUNREACH', 'EHOSTUNREACH']);

const UNREACHABLE_CAUSE = Symbol('unreachable');

/** A failed request as `DownloadFailed`: final when the host is unreachable, retryable otherwise. */
function networkError(url: string, err: unknown): TestenvError {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const cause = describeCause(err);
  const wrapped = new TestenvError('DownloadFailed', `${url}: ${cause}`, { cause: err });
  // no code: fetch refused the request itself (a blocked port, a malformed URL); the same request fails again
  if (!code || UNREACHABLE.has(code)) return Object.assign(wrapped, { [FINAL]: true, [UNREACHABLE_CAUSE]: cause });
  return wrapped;
}

/**
 * Why the host of `err`'s URL cannot be reached (DNS, refused, no route), without the URL (`ENOTFOUND: getaddrinfo
 * ENOTFOUND dl.k8s.io`); undefined when `err` says nothing of the kind.
 */
export function unreachableCause(err: TestenvError): string | undefined {
  return (err as TestenvError & { [UNREACHABLE_CAUSE]?: string })[UNREACHABLE_CAUSE];
}

/** The innermost cause's message: undici wraps socket errors as "fetch failed". */
function describeCause(err: unknown): string {
  let e: unknown = err;
  while (e instanceof Error && e.cause instanceof Error) e = e.cause;
  return e instanceof Error ? `${(e as NodeJS.ErrnoException).code ?? e.name}: ${e.message}` : String(e);
}

/** A disk-full or not-writable error of `path`, named as such; undefined for any other error. */
export function diskError(err: unknown, path: string): TestenvError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new TestenvError(
      'DiskFull',
      `no space left on the device holding ${path} (${code}): free some space, or set OPKIT_CACHE_DIR to a directory on another disk`,
      { cause: err },
    );
  }
  if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
    return new TestenvError(
      'CacheNotWritable',
      `cannot write ${path} (${code}): the cache directory is not writable; fix its permissions, or set OPKIT_CACHE_DIR to a writable directory`,
      { cause: err },
    );
  }
  return undefined;
}

const MB = 1024 * 1024;

/** One file's progress: a line rewritten in place on a TTY, or a start line and an end line. */
class Progress {
  readonly #started = performance.now();
  #lastDraw = 0;
  readonly label: string;
  readonly total: number | undefined;
  readonly tty: boolean;
  readonly log: (line: string) => void;

  constructor(label: string, total: number | undefined, tty: boolean, log: (line: string) => void) {
    this.label = label;
    this.total = total;
    this.tty = tty;
    this.log = log;
    if (!tty) this.log(`downloading ${label}${total === undefined ? '' : ` (${mb(total)})`}…`);
  }

  update(bytes: number): void {
    if (!this.tty) return;
    const now = performance.now();
    if (now - this.#lastDraw < 200) return;
    this.#lastDraw = now;
    const of = this.total === undefined ? '' : ` of ${mb(this.total)}`;
    process.stderr.write(`\r\x1b[K[opkit testenv] ${this.label}: ${mb(bytes)}${of}, ${this.#rate(bytes)}`);
  }

  done(bytes: number): void {
    if (this.tty) process.stderr.write('\r\x1b[K');
    const seconds = (performance.now() - this.#started) / 1000;
    this.log(`downloaded ${this.label}: ${mb(bytes)} in ${seconds.toFixed(1)} s (${this.#rate(bytes)})`);
  }

  abort(): void {
    if (this.tty) process.stderr.write('\r\x1b[K');
  }

  #rate(bytes: number): string {
    const seconds = Math.max((performance.now() - this.#started) / 1000, 0.001);
    return `${(bytes / MB / seconds).toFixed(1)} MB/s`;
  }
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MB`;
}
