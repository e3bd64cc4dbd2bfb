/**
 * @module manager/hooks
 * The `onStopped` hooks of a manager: what runs last, just before `start()` settles.
 *
 * Guarantees: hooks run one after another in the order added, each at most once; one that fails is logged, one that
 * takes longer than its timeout (default 10 s, an OTLP exporter's own request timeout) is left behind with a warning,
 * and neither stops the others.
 */

import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';

/** How long `run` waits for a hook unless it was added with its own timeout. */
export const STOPPED_HOOK_TIMEOUT_MS = 10_000;

/** The hooks to run when a manager's `start()` ends. */
export class StoppedHooks {
  readonly #log: Logger;
  readonly #hooks: { readonly fn: () => Promise<void> | void; readonly timeoutMs: number }[] = [];

  constructor(log: Logger) {
    this.#log = log;
  }

  /** Adds `fn`, waited for `timeoutMs` at most (default `STOPPED_HOOK_TIMEOUT_MS`). */
  add(fn: () => Promise<void> | void, timeoutMs = STOPPED_HOOK_TIMEOUT_MS): void {
    this.#hooks.push({ fn, timeoutMs });
  }

  /** Runs the hooks added so far (see the module comment); never rejects. */
  async run(): Promise<void> {
    for (const { fn, timeoutMs } of this.#hooks.splice(0)) {
      const cap = new AbortController();
      const outcome = await Promise.race([
        Promise.resolve()
          .then(fn)
          .then(
            () => 'done' as const,
            (err: unknown) => {
              this.#log.warn({ err: err instanceof Error ? err.message : String(err) }, 'an onStopped hook failed');
              return 'failed' as const;
            },
          ),
        sleep(timeoutMs, cap.signal).then(
          () => 'late' as const,
          () => 'late' as const,
        ),
      ]);
      cap.abort();
      if (outcome === 'late') this.#log.warn({ timeoutMs }, 'an onStopped hook is still running: not waiting longer');
    }
  }
}
