/**
 * @module controller/policy
 * What a controller does with a failed reconcile, as kube-rs's `error_policy`: a function from the error to an
 * `ErrorAction` — retry with the request's exponential backoff, retry after a fixed delay, or give up — and how loudly
 * to log it. `defaultErrorPolicy` is the table every controller uses unless `.onError` overrides it:
 *
 * | error | action | logged at |
 * | --- | --- | --- |
 * | `TerminalError` | give up (counted as terminal) | error |
 * | Conflict of an unforced server-side apply (another field manager owns a field it sets) | backoff | error |
 * | Conflict (409: the object changed meanwhile) | backoff | debug |
 * | TooManyRequests with Retry-After | after the server's delay | warn |
 * | anything while the controller is stopping | give up (the successor redoes it) | debug |
 * | `ReconcileTimeoutError` (the controller's `reconcileTimeoutMs` passed) | backoff | warn |
 * | anything else | backoff | error |
 *
 * Guarantees: a policy never sees an error before the reconcile ended, and whatever it answers, a request is never
 * reconciled by two workers at once. A policy that throws is treated as `backoff`. `handleFailure` applies the answer:
 * it counts the failure (and a terminal one), logs it at the level asked, and forgets, delays or backs off the request.
 */
import { isApiError } from '../client/errors.ts';
import { parseKey } from '../client/resource.ts';
import { messageOf, UsageError } from '../errors.ts';
import type { Logger, LogLevel } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { WorkQueue } from '../workqueue/index.ts';
import { ReconcileTimeoutError } from './deadline.ts';
import { isTerminalError, type ReconcileContext, type ReconcileRequest } from './reconcile.ts';

/** What to do with a failed request, the level it is logged at and, optionally, the log line's text. */
export type ErrorAction = (
  | { readonly retry: 'backoff' }
  | { readonly retry: 'after'; readonly afterMs: number }
  | { readonly retry: 'never'; readonly terminal?: boolean }
) & { readonly log: ErrorLogLevel; readonly message?: string };

/** The level a failed reconcile is logged at (any but `silent`). */
export type ErrorLogLevel = Exclude<LogLevel, 'silent'>;

/** Retry with the request's exponential backoff (5 ms doubling to 1000 s), at the priority it was handed out with. */
export function retryWithBackoff(log: ErrorLogLevel = 'error', message?: string): ErrorAction {
  return { retry: 'backoff', log, ...(message ? { message } : {}) };
}

/** Retry once `ms` milliseconds have passed (the request's failure count, which sets its backoff, is kept). */
export function retryAfter(ms: number, log: ErrorLogLevel = 'warn', message?: string): ErrorAction {
  if (!(ms > 0)) throw new UsageError('InvalidArgument', `retryAfter needs a positive delay in ms, got ${ms}`);
  return { retry: 'after', afterMs: ms, log, ...(message ? { message } : {}) };
}

/** Do not retry: the request is reconciled again only when something it watches changes. */
export function giveUp(log: ErrorLogLevel = 'error', message?: string): ErrorAction {
  return { retry: 'never', log, ...(message ? { message } : {}) };
}

/** What a policy knows besides the error. */
export interface ErrorInfo {
  /** The request whose reconcile failed. */
  readonly request: ReconcileRequest;
  /** How often this request has failed in a row before. */
  readonly retries: number;
  /** True when the controller is stopping (an abort then means "stop", not a failure). */
  readonly stopping: boolean;
  /** The failed reconcile's context. */
  readonly ctx: ReconcileContext;
}

/**
 * A request-based controller's error policy: the error and what is known about the failure, to what to do
 * (`ErrorAction`). `defaultErrorPolicy` unless `errorPolicy` is given.
 */
export type ErrorPolicy = (err: unknown, info: ErrorInfo) => ErrorAction;

/** The decision table of the module comment. */
export const defaultErrorPolicy: ErrorPolicy = (err, info) => {
  if (isTerminalError(err)) {
    return {
      retry: 'never',
      terminal: true,
      log: 'error',
      message: 'reconcile failed with a terminal error: not retrying',
    };
  }
  if (isApiError(err, 'Conflict') && err.causes.some((c) => c.reason === 'FieldManagerConflict')) {
    // an unforced apply: another manager owns a field it sets, which retrying alone will not change
    return retryWithBackoff('error', 'server-side apply conflict: another field manager owns a field this apply sets');
  }
  if (isApiError(err, 'Conflict')) {
    return retryWithBackoff('debug', 'conflict (the object changed meanwhile): retrying with fresh state');
  }
  if (isApiError(err, 'TooManyRequests') && err.retryAfterSeconds !== undefined && err.retryAfterSeconds > 0) {
    return retryAfter(err.retryAfterSeconds * 1000, 'warn', 'throttled by the apiserver');
  }
  if (info.stopping) return giveUp('debug', 'reconcile ended by the stop (not retried)');
  if (err instanceof ReconcileTimeoutError)
    return retryWithBackoff('warn', 'reconcile timed out: retrying with backoff');
  return retryWithBackoff('error');
};

/** Where a controller's failed requests go: its name (metrics), its queue and its policy. */
export interface FailureSink {
  readonly controller: string;
  readonly queue: WorkQueue<string>;
  readonly metrics: Metrics | undefined;
  readonly policy: ErrorPolicy | undefined;
}

/** A failed reconcile of `key` (handed out at `priority`): counted, decided by the policy, logged, requeued as told. */
export function handleFailure(
  sink: FailureSink,
  failure: { key: string; priority: number; err: unknown; stopping: boolean },
  log: Logger,
  ctx: ReconcileContext,
): void {
  const { controller, queue, metrics: m } = sink;
  const { key, priority, err } = failure;
  m?.reconcileTotal.inc({ controller, result: 'error' });
  m?.reconcileErrors.inc({ controller });
  const retries = queue.numRequeues(key);
  const info = { request: parseKey(key), retries, stopping: failure.stopping, ctx };
  let action: ErrorAction;
  try {
    action = (sink.policy ?? defaultErrorPolicy)(err, info);
  } catch (policyErr) {
    log.error({ err: messageOf(policyErr) }, 'the error policy threw: retrying with backoff');
    action = retryWithBackoff();
  }
  const fields = { err: messageOf(err), retries, ...(isApiError(err) ? { code: err.code } : {}) };
  if (action.retry === 'never') {
    if (action.terminal) m?.terminalReconcileErrors.inc({ controller });
    log[action.log](fields, action.message ?? 'reconcile failed: not retrying');
    queue.forget(key);
  } else if (action.retry === 'after') {
    log[action.log](
      { ...fields, retryInMs: action.afterMs },
      action.message ?? 'reconcile failed: retrying after a delay',
    );
    queue.addAfter(key, action.afterMs, priority);
  } else {
    log[action.log](fields, action.message ?? 'reconcile failed: retrying with backoff');
    queue.addRateLimited(key, priority);
  }
}
