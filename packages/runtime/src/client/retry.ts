/**
 * @module client/retry
 * When the transport sends a request again, and how long it waits first.
 *
 * Guarantees:
 * - An answer that says when to come back (429, or 500–504 with Retry-After) is retried up to `MAX_RETRIES` times,
 *   after the delay asked for (1 s when a 429 names none), at most `MAX_RETRY_AFTER_MS` each.
 * - A GET whose connection was reset, refused or closed before any answer is retried up to `MAX_RETRIES` times after a
 *   short jittered backoff (100 ms × 2^retry × 1–2). GETs are idempotent; writes are never replayed.
 * - A wait ends as soon as the request's cut-off signal aborts, rejecting as that signal says (`Timeout` or
 *   `Aborted`): the waits count against the request's deadline.
 * Everything else is the caller's: it is not retried here.
 */
import { isDroppedConnection, saysWhenToRetry } from '../internal/requests.ts';
import { sleep } from '../internal/sleep.ts';
import { cutOff } from './body.ts';
import { ApiError } from './errors.ts';

/** How many times a throttled answer or a reset GET is tried again. */
export const MAX_RETRIES = 3;
/** The longest Retry-After honoured per retry. */
export const MAX_RETRY_AFTER_MS = 10_000;

/**
 * The delay before retry number `retry + 1` of a request that failed without an answer (`err`), or `undefined` when
 * it must not be retried: only a GET whose connection dropped before any answer is.
 */
export function droppedRetryDelayMs(method: string, retry: number, err: unknown): number | undefined {
  if (method !== 'GET' || retry >= MAX_RETRIES || !isConnectionDropped(err)) return undefined;
  return 100 * 2 ** retry * (1 + Math.random());
}

/**
 * The delay before retry number `retry + 1` of a request answered with `err` (HTTP `status`), or `undefined` when the
 * answer does not ask to be retried, or the retries are spent.
 */
export function answerRetryDelayMs(status: number, retry: number, err: ApiError): number | undefined {
  if (!saysWhenToRetry(status, err.retryAfterSeconds) || retry >= MAX_RETRIES) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, (err.retryAfterSeconds ?? 1) * 1000);
}

/** Waits `ms`; rejects as the request's cut-off signal says (Timeout or Aborted) as soon as it aborts. */
export async function pause(ms: number, signal: AbortSignal, describe: string): Promise<void> {
  await sleep(ms, signal);
  if (signal.aborted) throw cutOff(describe, signal);
}

/** A connection that broke before any answer: worth one more try for an idempotent request. */
function isConnectionDropped(err: unknown): boolean {
  return err instanceof ApiError && err.code === 'Network' && isDroppedConnection(err.cause);
}
