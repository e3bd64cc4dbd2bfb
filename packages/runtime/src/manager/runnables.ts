/**
 * @module manager/runnables
 * What a manager runs, and the groups it runs them in (as controller-runtime's `runnable_group.go`): `Runnable`, and
 * `RunnableGroup`, a set of runnables started under one stop signal and stopped — and waited for — as a unit.
 *
 * Guarantees: a group's runnables all see their signal abort when the group stops or when the signal the group was
 * made with aborts; each rejection goes to the group's `onError` (with the signal that runnable ran under), once;
 * `done()` waits for the runnables started so far (`within(work, ms)`, in internal/sleep.ts, bounds such a wait).
 */

import { detachedFromTrace } from '../tracing/spans.ts';
import { WebhookServer } from '../webhook/server.ts';

/** Anything the manager runs: started with a signal, resolves when stopped. */
export interface Runnable {
  /**
   * Runs until `signal` aborts, then resolves once it has stopped; a rejection is fatal to the manager
   * (`RunnableFailed`; a `CacheError` `CacheSyncTimeout` rejects `start()` as it is).
   */
  start(signal: AbortSignal): Promise<void>;
  /** Run only on the leader (default true). */
  readonly needLeaderElection?: boolean;
  /**
   * It serves calls others route to this replica, as a webhook server does (a `WebhookServer` counts as one): run on
   * every replica, and stopped last in a graceful stop — after the controllers drained and the caches stopped.
   */
  readonly serves?: boolean;
  /**
   * Called on a serving runnable when a graceful stop begins, while it still serves: from then on it should answer
   * without keeping connections alive (HTTP `Connection: close`, as Go's `SetKeepAlivesEnabled(false)`), so that
   * clients make their next call on a new connection — which the Service routes to another replica — and no call is
   * under way on a kept-alive connection when it closes.
   */
  drain?(): void;
}

/** It serves calls routed to this replica (a webhook server): started on every replica, stopped last. */
export function isServing(r: Runnable): boolean {
  return r instanceof WebhookServer || r.serves === true;
}

/** What a group does with a runnable's rejection: `signal` is the one that runnable ran under. */
export type RunnableErrorHandler = (err: unknown, signal: AbortSignal) => void;

/**
 * Runnables started under one stop: each runs with a signal that aborts when the group stops, when `stopWith`
 * aborts, or when the extra signal it was started with does.
 */
export class RunnableGroup {
  readonly #stop = new AbortController();
  readonly #stopWith: AbortSignal;
  readonly #onError: RunnableErrorHandler;
  readonly #running: Promise<void>[] = [];

  constructor(stopWith: AbortSignal, onError: RunnableErrorHandler) {
    this.#stopWith = stopWith;
    this.#onError = onError;
  }

  /** How many runnables were started in this group. */
  get size(): number {
    return this.#running.length;
  }

  /** Starts `r` (outside any active trace span: it is long-lived), stopped also by `until` when given. */
  start(r: Runnable, until?: AbortSignal): void {
    const signal = AbortSignal.any([this.#stopWith, ...(until ? [until] : []), this.#stop.signal]);
    this.#running.push(detachedFromTrace(() => r.start(signal)).catch((err: unknown) => this.#onError(err, signal)));
  }

  /** Aborts every runnable's signal (and that of any started later); idempotent. */
  stop(reason?: unknown): void {
    this.#stop.abort(reason);
  }

  /** Resolves once every runnable started so far has returned. */
  done(): Promise<unknown> {
    return Promise.all(this.#running);
  }
}
