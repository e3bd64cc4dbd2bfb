/**
 * @module helpers
 * Small helpers for the integration tests: polling with a deadline, and pid checks.
 */

/** True when the pid runs (a zombie counts as ended). */
export { isProcessAlive as alive } from '../src/process.ts';
export { waitFor } from '../src/wait.ts';

export const quiet = (): void => {};
