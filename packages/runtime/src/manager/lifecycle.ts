/**
 * @module manager/lifecycle
 * One run of a manager, from the moment its servers listen to the end of its stop (as controller-runtime's
 * `runnableGroup`s and `engageStopProcedure`): the shared cache, the runnable groups — serving runnables (webhook
 * servers), the others that run on every replica, and those that run on the leader (the controllers) — leader
 * election, and the stop.
 *
 * Guarantees (the phases are listed in manager/manager.ts's module comment):
 * - The stop begins when the caller's signal aborts or on the first fatal error (`fail`), whichever comes first: from
 *   that moment `onStopBegins` has run (readiness fails) and, in a graceful stop, every serving runnable was told to
 *   `drain`.
 * - A graceful stop waits for the controllers for the drain time plus 1 s, then stops the groups in phases: the Lease,
 *   the Events (with the serving runnables' lame-duck time), the caches, the serving runnables, the HTTP servers. The
 *   phases after the Lease share what is left of a budget of twice the drain time plus 1 s.
 * - After a fatal error everything stops at once (runnables get 1 s to return), and no Event write is started.
 * - Every step runs even if an earlier one failed; its failure is logged and kept, and `throwIfStopFailed` throws
 *   them as `StopFailed` after a graceful stop (after a fatal error they are only logged).
 */

import type { Cache } from '../cache/cache.ts';
import { CacheError } from '../cache/cache.ts';
import type { EventRecorder } from '../helpers/events.ts';
import { sleep, untilAborted, within } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import { detachedFromTrace } from '../tracing/spans.ts';
import type { ManagerEndpoints } from './endpoints.ts';
import { ManagerError } from './errors.ts';
import type { LeaderElector } from './leader.ts';
import { isServing, type Runnable, RunnableGroup } from './runnables.ts';

/** How long past the drain time a graceful stop still waits for runnables to return. */
export const DRAIN_MARGIN_MS = 1_000;

/** What one run of a manager runs and stops. */
export interface LifecycleParts {
  /** Where the run logs. */
  readonly log: Logger;
  /** The caller's stop (`start()`'s signal). */
  readonly signal: AbortSignal;
  /** The drain time (`gracefulShutdownTimeoutMs`). */
  readonly gracefulShutdownTimeoutMs: number;
  /** The shared cache: started with the runnables, stopped after the Events were flushed. */
  readonly cache: Cache;
  /** Every runnable added to the manager. */
  readonly runnables: readonly Runnable[];
  /** The Event recorders to flush (read when the stop flushes them). */
  readonly recorders: () => Iterable<EventRecorder>;
  /** The metrics and health servers, already listening: closed last. */
  readonly endpoints: ManagerEndpoints;
  /** Where the leader status gauge is set. */
  readonly metrics: Metrics;
  /** Called the moment the stop begins. */
  readonly onStopBegins: () => void;
}

/** The Lease an elector campaigns for. */
export interface Lease {
  /** Its namespace. */
  readonly namespace: string;
  /** Its name. */
  readonly name: string;
}

/** One run: start with `startAll`, then `lead` or `campaign`, `untilStopped`, and (always) `stop`. */
export class Lifecycle {
  /** Aborts when the stop begins: the caller's signal, or a fatal error. */
  readonly stopping: AbortSignal;
  readonly #p: LifecycleParts;
  readonly #fatal = new AbortController();
  #fatalError: ManagerError | CacheError | undefined;
  /** When the stop began (`performance.now()`); infinite until then. */
  #stopBegan = Number.POSITIVE_INFINITY;
  /** The failures of the stop's steps, and of runnables once a graceful stop began. */
  readonly #problems: unknown[] = [];
  readonly #cacheStop = new AbortController();
  readonly #electorStop = new AbortController();
  #electing: Promise<void> = Promise.resolve();
  /** Webhook servers and other serving runnables: on every replica, stopped last; at once only on a fatal error. */
  readonly #serving: RunnableGroup;
  /** The runnables that do not need leader election. */
  readonly #others: RunnableGroup;
  /** The controllers and the other runnables that run only while leading. */
  readonly #leaderElection: RunnableGroup;

  constructor(parts: LifecycleParts) {
    this.#p = parts;
    this.stopping = AbortSignal.any([parts.signal, this.#fatal.signal]);
    const onError = (err: unknown, signal: AbortSignal) => this.#runnableFailed(err, signal);
    this.#serving = new RunnableGroup(this.#fatal.signal, onError);
    this.#others = new RunnableGroup(this.stopping, onError);
    this.#leaderElection = new RunnableGroup(this.stopping, onError);
    if (this.stopping.aborted) this.#beginStop();
    else this.stopping.addEventListener('abort', () => this.#beginStop(), { once: true });
  }

  /** The fatal error that stopped the run, if one did. */
  get fatalError(): ManagerError | CacheError | undefined {
    return this.#fatalError;
  }

  /** Starts the cache, the serving runnables and those that do not need leader election. */
  startAll(): void {
    // the caches, leader election and the runnables are long-lived: none nests under a span active at start()
    detachedFromTrace(() => this.#p.cache.start(this.#cacheStop.signal));
    for (const r of this.#p.runnables.filter(isServing)) this.#serving.start(r);
    for (const r of this.#p.runnables.filter((x) => x.needLeaderElection === false && !isServing(x)))
      this.#others.start(r);
  }

  /** Starts the runnables that need leader election, stopped also when `leading` aborts. */
  lead(leading?: AbortSignal): void {
    for (const r of this.#p.runnables.filter((x) => x.needLeaderElection !== false && !isServing(x)))
      this.#leaderElection.start(r, leading);
  }

  /** Campaigns for `lease` with `elector`: `lead` while leading; a lost Lease is fatal (`LeaderElectionLost`). */
  campaign(elector: LeaderElector, lease: Lease): void {
    const status = this.#p.metrics.leaderStatus;
    status.set({ name: lease.name }, 0);
    this.#electing = detachedFromTrace(() =>
      elector.run(AbortSignal.any([this.#electorStop.signal, this.#fatal.signal]), {
        onStartedLeading: (leading) => {
          status.set({ name: lease.name }, 1);
          this.lead(leading);
        },
        onStoppedLeading: () => {
          status.set({ name: lease.name }, 0);
          this.#fail(
            new ManagerError(
              'LeaderElectionLost',
              `leader election lost: the Lease ${lease.namespace}/${lease.name} could not be renewed in time; stopping at once`,
            ),
          );
        },
        onNewLeader: (id) => this.#p.log.info({ leader: id || '(none)' }, 'leader changed'),
      }),
    );
  }

  /**
   * Resolves when the stop has begun and, in a graceful stop, the runnables drained (for the drain time plus 1 s at
   * most: a runnable still running then is left behind, so that the Lease is released in time).
   */
  async untilStopped(): Promise<void> {
    if (!this.stopping.aborted) await untilAborted(this.stopping);
    if (this.#fatalError) return;
    const drainMs = this.#p.gracefulShutdownTimeoutMs;
    this.#p.log.info({ timeoutMs: drainMs }, 'stopping: draining in-flight work');
    // bounded: reconciles get the drain time, then their signal (and requests) abort
    const work = Promise.all([this.#others.done(), this.#leaderElection.done()]);
    if (!(await within(work, drainMs + DRAIN_MARGIN_MS)))
      this.#p.log.warn(
        { timeoutMs: drainMs + DRAIN_MARGIN_MS },
        'stopping without waiting longer: work still running past the drain time',
      );
  }

  /** The phases of the stop that follow the drain (all at once after a fatal error); every step runs. */
  async stop(): Promise<void> {
    if (this.#fatalError) await this.#cutShort();
    this.#others.stop();
    this.#leaderElection.stop();
    this.#electorStop.abort();
    await this.#step('releasing the Lease', () => this.#electing);
    const left = this.#budget();
    await this.#step('flushing Events', () => this.#flushEvents(left));
    this.#p.log.info({}, 'stopping: the caches');
    this.#cacheStop.abort();
    await this.#stopServing(left);
    const endpoints = this.#p.endpoints;
    if (endpoints.listening) {
      this.#p.log.info({}, 'stopping: the HTTP servers');
      await this.#step('closing the HTTP servers', () => endpoints.close());
    }
    await this.#step('releasing the metrics certificate', () => endpoints.release());
  }

  /**
   * Throws `StopFailed` (its `cause`: the failure, or an `AggregateError` of several) when steps of a graceful stop
   * failed; after a fatal error, or when the run itself threw (`ranToStop` false), only logs them.
   */
  throwIfStopFailed(ranToStop: boolean): void {
    const problems = this.#problems;
    if (problems.length === 0) return;
    if (this.#fatalError || !ranToStop) {
      this.#p.log.warn({ failed: problems.length }, 'stopping after an error: steps of the stop failed too');
      return;
    }
    throw new ManagerError('StopFailed', `stopping failed: ${problems.map(describe).join('; ')}`, {
      cause: problems.length === 1 ? problems[0] : new AggregateError(problems, 'stopping failed'),
    });
  }

  /** A fatal error stops everything at once; the first one is the run's outcome. */
  #fail(err: ManagerError | CacheError): void {
    if (this.#fatalError) return;
    this.#fatalError = err;
    this.#p.log.error({ code: err.code }, err.message);
    this.#fatal.abort(err);
  }

  /** Readiness fails from the first moment of a stop, and serving runnables stop keeping connections alive. */
  #beginStop(): void {
    this.#p.onStopBegins();
    this.#stopBegan = performance.now();
    if (this.#fatalError) return;
    for (const r of this.#p.runnables.filter(isServing)) {
      try {
        r.drain?.();
      } catch (err) {
        this.#p.log.warn({ err: describe(err) }, 'stopping: a server could not start draining');
      }
    }
  }

  /**
   * A runnable's rejection: fatal while running (a `CacheError` `CacheSyncTimeout` as it is, any other as
   * `RunnableFailed`). Once a graceful stop began (as controller-runtime, whose errors are only logged once the stop
   * is engaged), an abort of its own signal is a normal end and any other error a problem of the stop.
   */
  #runnableFailed(err: unknown, signal: AbortSignal): void {
    if (this.stopping.aborted && !this.#fatalError) {
      if (signal.aborted && (err === signal.reason || (err instanceof Error && err.name === 'AbortError'))) return;
      this.#p.log.error({ err: describe(err) }, 'stopping: a runnable failed after the stop began');
      this.#problems.push(err);
      return;
    }
    if (err instanceof CacheError && err.code === 'CacheSyncTimeout') this.#fail(err);
    else this.#fail(new ManagerError('RunnableFailed', describe(err), { cause: err }));
  }

  /** After a fatal error: every group's signal aborts; what they were doing gets a moment to end, no more. */
  async #cutShort(): Promise<void> {
    this.#others.stop(this.#fatalError);
    this.#leaderElection.stop(this.#fatalError);
    this.#serving.stop();
    const all = Promise.all([this.#others.done(), this.#leaderElection.done(), this.#serving.done()]);
    await within(all, DRAIN_MARGIN_MS);
  }

  /** What is left of a graceful stop's budget (twice the drain time and the margin, from its start); 0 otherwise. */
  #budget(): () => number {
    const drainMs = this.#p.gracefulShutdownTimeoutMs;
    const began = this.#stopBegan;
    const deadline = Number.isFinite(began) ? began + 2 * drainMs + DRAIN_MARGIN_MS : performance.now();
    return () => (this.#fatalError ? 0 : Math.max(0, deadline - performance.now()));
  }

  /**
   * Events under way get the drain time after a graceful stop, none after a fatal error (a lost Lease: stop acting);
   * meanwhile the serving runnables keep accepting calls until the drain time has passed since the stop began, so
   * that the Service has dropped this replica from its endpoints before the listener closes (when no stop began —
   * the start itself failed — nothing was routed here to wait for).
   */
  async #flushEvents(left: () => number): Promise<void> {
    const drainMs = this.#p.gracefulShutdownTimeoutMs;
    const began = this.#stopBegan;
    const lameDuck =
      this.#fatalError || this.#serving.size === 0 || !Number.isFinite(began)
        ? 0
        : Math.max(0, began + drainMs - performance.now());
    await Promise.all([
      ...[...this.#p.recorders()].map((r) => r.flush(Math.min(drainMs, left()))),
      lameDuck > 0 ? sleep(lameDuck, this.#fatal.signal) : undefined,
    ]);
  }

  /** The serving runnables stop: calls under way are answered until the budget is spent. */
  async #stopServing(left: () => number): Promise<void> {
    if (this.#serving.size > 0) {
      this.#p.log.info({}, 'stopping: the webhook server');
      this.#serving.stop();
      if (!(await within(this.#serving.done(), left())))
        this.#p.log.warn({}, 'stopping without waiting longer: webhook calls still under way');
    }
    this.#serving.stop();
  }

  /** One step of the stop: its failure is kept (and logged), and the next steps run anyway. */
  async #step(what: string, fn: () => Promise<unknown> | unknown): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.#p.log.error({ err: describe(err) }, `stopping: ${what} failed`);
      this.#problems.push(err);
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
