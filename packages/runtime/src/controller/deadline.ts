/**
 * @module controller/deadline
 * The per-reconcile timeout (`reconcileTimeoutMs`, as controller-runtime's `ReconciliationTimeout`): each reconcile
 * gets a deadline, and when it passes the reconcile's `ctx.signal` aborts.
 *
 * Guarantees:
 * - At the deadline, and not later than the controller's clock fires it, `ctx.signal` aborts (with it every request of
 *   `ctx.rawClient` and of `ctx`'s writes), the timeout is counted (`controller_runtime_reconcile_timeouts_total`,
 *   controller-runtime's name) and logged once, at warn level, with the request and the limit.
 * - A reconcile whose deadline passed ends as a `ReconcileTimeoutError` (its `cause`: what the reconcile threw, if it
 *   threw), which goes to the controller's error policy (the default retries it with backoff), whatever the reconcile
 *   returned: work cut short by the aborted signal is never taken for success.
 * - A reconcile that ignores its signal keeps its worker until it returns: the request is never reconciled twice at
 *   once (JavaScript cannot stop a running function; the abort is the contract, as Go's context is).
 * - No limit (the default, or 0): no timer, and nothing else changes.
 */
import { OpkitError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Clock } from '../workqueue/index.ts';

/** The code of a `ReconcileTimeoutError`. */
export type ReconcileTimeoutErrorCode =
  /** A reconcile ran past its controller's `reconcileTimeoutMs`: its signal aborted, and it is retried. */
  'ReconcileTimeout';

/** A reconcile that ran past its controller's `reconcileTimeoutMs`; `cause` is what it threw, if it threw. */
export class ReconcileTimeoutError extends OpkitError<ReconcileTimeoutErrorCode> {
  override readonly name = 'ReconcileTimeoutError';
  /** The limit it ran past, in milliseconds. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, options?: { cause?: unknown }) {
    super(
      'ReconcileTimeout',
      `the reconcile ran past its timeout of ${timeoutMs} ms (reconcileTimeoutMs, --reconcile-timeout): its signal aborted`,
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** One reconcile's deadline. */
export interface Deadline {
  /** Aborts at the deadline (the reconcile's signal, with the controller's). */
  readonly signal: AbortSignal;
  /** Ends the timer once the reconcile returned; then `ReconcileTimeoutError` if the deadline had passed, else `err`. */
  settle(err: unknown): unknown;
  /** Whether the deadline passed. */
  readonly passed: boolean;
}

/** What a deadline reports to. */
export interface DeadlineDeps {
  readonly controller: string;
  readonly clock: Clock;
  readonly metrics: Metrics | undefined;
  readonly log: Logger;
}

/**
 * The deadline of one reconcile, `timeoutMs` from now (undefined when there is no limit): its signal aborts when
 * `stopping` does or at the deadline.
 */
export function startDeadline(
  timeoutMs: number | undefined,
  stopping: AbortSignal,
  deps: DeadlineDeps,
): Deadline | undefined {
  if (!timeoutMs || timeoutMs <= 0) return undefined;
  const abort = new AbortController();
  let passed = false;
  const timer = deps.clock.setTimer(timeoutMs, () => {
    passed = true;
    deps.metrics?.reconcileTimeouts.inc({ controller: deps.controller });
    deps.log.warn({ timeoutMs }, 'the reconcile ran past its timeout: its signal aborts, and it will be retried');
    abort.abort(new ReconcileTimeoutError(timeoutMs));
  });
  return {
    signal: AbortSignal.any([stopping, abort.signal]),
    get passed() {
      return passed;
    },
    settle(err) {
      timer.cancel();
      if (!passed || err instanceof ReconcileTimeoutError) return err;
      return new ReconcileTimeoutError(timeoutMs, err === undefined ? undefined : { cause: err });
    },
  };
}
