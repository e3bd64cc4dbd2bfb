/**
 * @module controller/deadline
 * The per-reconcile timeout (`reconcileTimeoutMs`, as controller-runtime's `ReconciliationTimeout`): each reconcile
 * gets a deadline, and when it passes the reconcile's `ctx.signal` aborts.
 *
 * Guarantees:
 * - The deadline runs from the moment the reconciler is called (`arm`). When it passes, and not before the
 *   controller's clock fires it, `ctx.signal` aborts (with it every request of `ctx.rawClient` and of `ctx`'s writes),
 *   and the timeout is counted (`controller_runtime_reconcile_timeouts_total`, controller-runtime's name) and logged
 *   once at warn level, with the request and the limit; both happen then, while the reconcile may still run.
 * - A stop (or a withdrawn shard ticket) that aborts the reconcile first cancels the deadline: it is not a timeout.
 * - What the reconcile ends with is kept, as controller-runtime keeps it, except for what the deadline's abort caused:
 *   an error whose `cause` chain reaches the abort (an aborted request, `signal.throwIfAborted()`, an aborted timer)
 *   becomes a `ReconcileTimeoutError` with that error as its `cause`, which goes to the error policy (the default
 *   retries it with backoff). A `TerminalError`, a Conflict, or a normal return after the deadline stay what they are.
 * - A reconcile that ignores its signal keeps its worker until it returns: the request is never reconciled twice at
 *   once (JavaScript cannot stop a running function; the abort is the contract, as Go's context is).
 * - No limit (the default, or 0): no timer, and nothing else changes. A negative or non-numeric limit is refused when
 *   the controller is made (`UsageError`).
 */
import { OpkitError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Clock, Timer } from '../workqueue/index.ts';

/** The code of a `ReconcileTimeoutError`. */
export type ReconcileTimeoutErrorCode =
  /** A reconcile ran past its controller's `reconcileTimeoutMs`: its signal aborted (the default policy retries it). */
  'ReconcileTimeout';

/**
 * A reconcile cut off by its controller's `reconcileTimeoutMs` (the reason its `ctx.signal` aborted with); `cause`:
 * the error the abort caused, when the reconcile threw one.
 */
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
  /** Aborts at the deadline, or when the controller's signal does. */
  readonly signal: AbortSignal;
  /** Starts the timer (right before the reconciler is called). */
  arm(): void;
  /** Ends the timer once the reconcile ended; returns what the reconcile ended with, or the timeout it caused. */
  settle(err: unknown): unknown;
}

/** What a deadline reports to. */
export interface DeadlineDeps {
  readonly controller: string;
  readonly clock: Clock;
  readonly metrics: Metrics | undefined;
  readonly log: Logger;
}

/** Whether `err`, or an error in its `cause` chain, is `reason`. */
function causedBy(err: unknown, reason: unknown): boolean {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    if (e === reason) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * The deadline of one reconcile, `timeoutMs` after `arm()` (undefined when there is no limit): its signal aborts when
 * `stopping` does or at the deadline.
 */
export function startDeadline(
  timeoutMs: number | undefined,
  stopping: AbortSignal,
  deps: DeadlineDeps,
): Deadline | undefined {
  if (!timeoutMs || stopping.aborted) return undefined;
  const abort = new AbortController();
  const reason = new ReconcileTimeoutError(timeoutMs);
  let timer: Timer | undefined;
  const stopped = () => timer?.cancel();
  return {
    signal: AbortSignal.any([stopping, abort.signal]),
    arm() {
      stopping.addEventListener('abort', stopped, { once: true });
      timer = deps.clock.setTimer(timeoutMs, () => {
        stopping.removeEventListener('abort', stopped);
        deps.metrics?.reconcileTimeouts.inc({ controller: deps.controller });
        deps.log.warn({ timeoutMs }, 'the reconcile ran past its timeout: its signal aborts');
        abort.abort(reason);
      });
    },
    settle(err) {
      timer?.cancel();
      stopping.removeEventListener('abort', stopped);
      if (!abort.signal.aborted || !causedBy(err, reason)) return err;
      return err === reason ? err : new ReconcileTimeoutError(timeoutMs, { cause: err });
    },
  };
}
