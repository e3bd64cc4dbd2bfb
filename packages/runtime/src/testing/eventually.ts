/**
 * @module testing/eventually
 * `eventually(what, fn, options)`: polls `fn` until it answers (anything but `undefined`, `null` or `false`) or the
 * timeout passes; a function that throws is polled again, and on timeout the last error is the `cause` of the
 * `TestingError` `EventuallyTimeout`. `check`, called before each poll, ends the wait at once by throwing.
 */
import { TestingError } from './errors.ts';

/** How long and how often `eventually` polls. */
export interface EventuallyOptions {
  /** Default 30 s. */
  readonly timeoutMs?: number;
  /** Default 100 ms. */
  readonly intervalMs?: number;
  /** Ends the wait before the next poll once aborted, rejecting with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** What a polled function answers: a value, or one of the three "not yet" answers. */
export type Answer<T> = T | undefined | null | false;

/** Polls `fn` until it answers (see the module comment); `what` names the wait in the timeout error. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<Answer<T>> | Answer<T>,
  options: EventuallyOptions & { readonly check?: () => void } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    options.check?.();
    options.signal?.throwIfAborted();
    try {
      const answer = await fn();
      if (answer !== undefined && answer !== null && answer !== false) return answer;
      last = undefined;
    } catch (err) {
      last = err;
    }
    if (performance.now() >= deadline) {
      const why = last === undefined ? '' : `: ${last instanceof Error ? last.message : String(last)}`;
      throw new TestingError('EventuallyTimeout', `${what}: not within ${timeoutMs / 1000} s${why}`, { cause: last });
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 100));
  }
}
