/**
 * @module helpers
 * Small helpers for the integration tests: polling with a deadline, and pid checks.
 */
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
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
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    }
    await sleep(200);
  }
}

/** True when the pid runs (a zombie counts as ended). */
export { isProcessAlive as alive } from '../src/process.ts';

export const quiet = (): void => {};
