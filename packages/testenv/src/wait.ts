/**
 * @module wait
 * `waitFor(what, check)`: polls `check` until it returns a value (not undefined or false) and resolves with it, or
 * rejects after `timeoutMs` with a `TestenvError` `WaitTimeout` naming `what` and the last error `check` threw — the
 * "eventually" of tests against a real cluster, where every effect is asynchronous.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from './errors.ts';

/**
 * Polls `check` every `pollMs` until it returns a value (not undefined or false) and resolves with it; rejects after
 * `timeoutMs` (default 30 s) with a `TestenvError` `WaitTimeout` naming `what` and the last error `check` threw
 * (also its `cause`).
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
  pollMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new TestenvError(
        'WaitTimeout',
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
        last === undefined ? undefined : { cause: last },
      );
    }
    await sleep(pollMs);
  }
}
