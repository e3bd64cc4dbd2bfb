/**
 * @module controller/controller
 * A controller: watched informers enqueue requests into a rate-limited work queue; `maxConcurrentReconciles`
 * workers take requests and call the reconciler.
 *
 * Guarantees:
 * - One request is never reconciled by two workers at once; a request changed during its reconcile is reconciled
 *   again afterwards (the queue's dirty/processing rule).
 * - Workers start only after every watched informer has synced (else `start` rejects with the `CacheError`
 *   `CacheSyncTimeout`).
 * - A thrown error is retried with per-request exponential backoff (5 ms … 1000 s, each request on its own; the
 *   `rateLimiter` option can add an overall limit); a Conflict (409) is retried the same way but logged at debug
 *   level only; TooManyRequests waits the server's Retry-After; a `TerminalError` is not retried. `requeueAfter(ms)`
 *   schedules the request again.
 * - Priorities: adds from the initial list and resyncs wait behind fresh changes (`LOW_PRIORITY`), so a change made
 *   while thousands of objects are being listed is reconciled at once. A retry, a requeue and a wait for expectations
 *   are queued at the priority the request was handed out with (or the result's `priority`), as controller-runtime
 *   does: an initial-list object that fails stays behind fresh changes, a fresh one that fails stays ahead.
 * - An update enqueues the requests of the old object and of the new one, deduplicated (as controller-runtime's
 *   handlers do): when a child moves to another owner, or a mapping depends on labels that changed, the previous
 *   owner is reconciled too.
 * - Expectations: a request with unobserved creates/deletes (see `ctx.expect`) is not reconciled until the cache has
 *   caught up or the expectation times out; it is re-checked when its children change and at least once a second. A
 *   create without an answer (`ctx.expect.maybeCreated`) is first looked for in the apiserver.
 *   Every event of a watched kind is shown to the expectations (see expectations.ts).
 * - `ctx.rawClient` aborts its requests when `ctx.signal` does, so a hung request cannot outlast the drain.
 * - With `reconcileTimeoutMs`, a reconcile's `ctx.signal` also aborts at its deadline, which is counted and logged; an
 *   error the abort caused reaches the error policy as a `ReconcileTimeoutError` (controller/deadline.ts).
 * - An `Aborted` error means "stopping" only when the controller is stopping; a reconcile that aborted a call of its
 *   own (say with `AbortSignal.timeout`) is retried with backoff like any failure.
 * - With a `gate` (sharding), each request is reconciled only if the gate admits it then (else it is dropped, or
 *   queued again after the delay the gate asks for); its `ctx.signal` also aborts when the gate withdraws it, the
 *   ticket's guard is asked before each request the reconcile sends, and the gate hears when it ended. A deleted
 *   primary object's last state is shown to the gate until its request was reconciled.
 * - With a `fence` (leader election; not asked when `needLeaderElection` is false), a request is reconciled only
 *   while it lets this replica act, and each request its reconcile sends asks it first.
 * - `ctx.watchKinds` adds and removes watches while it runs (controller/dynamic.ts); all go when it stops.
 * - Each reconcile that ends without an error is logged at debug level (`reconciled`, with the request, its
 *   `reconcileID`, `durationMs` and any `requeueAfterMs`); a failed one at the level its error policy says.
 * - Stopping (the `start` signal aborts): no new work is taken; in-flight reconciles may finish for
 *   `gracefulShutdownTimeoutMs` (default 2 s), after which their `ctx.signal` aborts, and with it their requests.
 */
import { randomUUID } from 'node:crypto';
import { type Cache, CacheError } from '../cache/cache.ts';
import type { Informer } from '../cache/informer.ts';
import { type Kind, type KubeObject, keyOf, objectKey, parseKey } from '../client/resource.ts';
import { messageOf, UsageError } from '../errors.ts';
import { EventRecorder } from '../helpers/events.ts';
import { allGuards, passes } from '../internal/guards.ts';
import { untilAborted } from '../internal/sleep.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { endReconcileSpan, runtimeTracer, startReconcileSpan, withActiveSpan } from '../tracing/spans.ts';
import { LOW_PRIORITY, realClock, WorkQueue } from '../workqueue/index.ts';
import { startDeadline } from './deadline.ts';
import { DynamicWatches } from './dynamic.ts';
import { Expectations, expectFor } from './expectations.ts';
import type { MapFunc } from './handlers.ts';
import { MapRunner } from './mapping.ts';
import { type Admission, type ControllerOptions, DEFAULT_CACHE_SYNC_TIMEOUT_MS, type WatchRole } from './options.ts';
import { handleFailure } from './policy.ts';
import { allow, type Predicate } from './predicates.ts';
import {
  logFields,
  type ReconcileContext,
  type ReconcileRequest,
  type Reconciler,
  type Result,
  refuseRenamedFields,
  requeuePriority,
} from './reconcile.ts';

export type { ControllerOptions, GateAnswer, RequestGate, RequestTicket, WatchRole } from './options.ts';
/** Time in-flight reconciles get on stop before their `ctx.signal` aborts, unless configured. */
export const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS = 2_000;

/**
 * Reconciles requests of one primary kind from a rate-limited work queue fed by its watches; see the module comment for
 * its guarantees. Usually built with `mgr.controller(kind)…` (`ControllerBuilder`).
 *
 * @showModuleComment
 */
export class Controller {
  /** The controller's name. */
  readonly name: string;
  /** Its work queue of request keys (`namespace/name`). */
  readonly queue: WorkQueue<string>;
  /** The creates and deletes it waits to see in the cache before reconciling a request again. */
  readonly expectations: Expectations;
  /** The kinds its requests name while it runs (`ctx.watchKinds`). */
  readonly #dynamic: DynamicWatches;
  readonly #o: ControllerOptions;
  readonly #reconciler: Reconciler;
  readonly #log: Logger;
  readonly #watched: Informer<KubeObject>[] = [];
  readonly #unwatch: (() => void)[] = [];
  #primary: Informer<KubeObject> | undefined;
  readonly #events: EventRecorder;
  /** Whether `#events` is this controller's own (flushed on stop), not one given in the options. */
  readonly #ownEvents: boolean;
  #active = 0;
  #started = false;
  /** With a gate: the last state of deleted primary objects, until their request is reconciled or dropped. */
  readonly #tombstones = new Map<string, KubeObject>();

  constructor(options: ControllerOptions, reconciler: Reconciler) {
    const limit = options.reconcileTimeoutMs;
    if (limit !== undefined && !(limit >= 0))
      throw new UsageError('InvalidArgument', `controller ${options.name}: reconcileTimeoutMs ${limit} is not ≥ 0`);
    this.#o = options;
    this.name = options.name;
    this.#reconciler = reconciler;
    this.#log = (options.log ?? silentLogger).child({ controller: options.name });
    this.#ownEvents = options.events === undefined;
    this.#events =
      options.events ??
      new EventRecorder({
        client: this.#fence ? options.client.withGuard(this.#fence) : options.client,
        component: options.name,
        log: this.#log.child({ component: 'events' }),
      });
    this.queue = new WorkQueue<string>({
      name: options.name,
      clock: options.clock ?? realClock,
      ...(options.rateLimiter ? { rateLimiter: options.rateLimiter } : {}),
      ...(options.metrics
        ? {
            metrics: options.metrics.queue(options.name, () => ({
              unfinished: this.queue.unfinishedWorkSeconds(),
              longest: this.queue.longestRunningProcessorSeconds(),
            })),
          }
        : {}),
    });
    this.expectations = new Expectations({
      log: this.#log,
      ...(options.clock ? { now: () => options.clock?.now() ?? 0 } : {}),
      ...(options.expectationTimeoutMs !== undefined ? { timeoutMs: options.expectationTimeoutMs } : {}),
    });
    this.#dynamic = new DynamicWatches({
      ...{ cache: options.cache, queue: this.queue, expectations: this.expectations, log: this.#log },
      exists: (key) => this.#primary?.store.get(key) !== undefined || this.#tombstones.has(key),
      syncTimeoutMs: options.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS,
    });
  }

  /** Whether a manager runs it only on the leader (see `ControllerOptions.needLeaderElection`). */
  get needLeaderElection(): boolean {
    return this.#o.needLeaderElection ?? true;
  }

  /** The fence, for a controller that runs on the leader only (one that runs on every replica needs none). */
  get #fence(): (() => void) | undefined {
    return this.needLeaderElection ? this.#o.fence : undefined;
  }

  /**
   * Enqueues the requests `map` returns for each change of `r` that passes `predicates`. The first call names the
   * primary kind (used by resync). With a gate that partitions caches, the primary and owned kinds (`role`) are cached
   * by partition. `from`: `r` in another (started) cache, e.g. a fleet member's watch of the hub; `map` reads it.
   */
  watch<T extends KubeObject>(
    r: Kind<T>,
    map: MapFunc<T>,
    predicates: readonly Predicate<T>[] = [],
    role: WatchRole = this.#primary ? 'other' : 'primary',
    from?: Cache,
  ): void {
    const by = role === 'other' ? undefined : this.#o.gate?.partitioning?.(role, r);
    if (by) this.#o.cache.partition(r, by); // a watch of another cache (`from`) is an 'other': never partitioned
    const informer = (from ?? this.#o.cache).informer(r);
    const primary = !this.#primary;
    if (primary) this.#primary = informer as unknown as Informer<KubeObject>;
    this.#watched.push(informer as unknown as Informer<KubeObject>);
    const o = this.#o;
    const lane = new MapRunner<T>({
      controller: this.name,
      kind: r.kind,
      map,
      cache: from ?? o.cache,
      log: this.#log,
      metrics: o.metrics,
      clock: o.clock ?? realClock,
      concurrency: o.mapperConcurrency,
      timeoutMs: o.mapperTimeoutMs,
      enqueue: (req, priority) => this.queue.add(objectKey(req), priority),
    });
    const off = informer.addEventHandler({
      // the initial list goes behind fresh changes (controller-runtime's priority queue)
      add: (obj, initial) => {
        this.expectations.observe(obj, false);
        if (allow(predicates, 'create', undefined, obj)) lane.submit([obj], initial ? LOW_PRIORITY : 0);
      },
      update: (old, obj) => {
        this.expectations.observe(obj, false);
        if (allow(predicates, 'update', old, obj)) lane.submit([old, obj], 0);
      },
      delete: (obj) => {
        if (primary && this.#o.gate) this.#tombstones.set(keyOf(obj), obj);
        if (primary) this.#dynamic.forget(keyOf(obj));
        this.expectations.observe(obj, true);
        if (allow(predicates, 'delete', undefined, obj)) lane.submit([obj], 0);
      },
    });
    this.#unwatch.push(() => {
      off();
      lane.stop();
    });
  }

  /** The resources this controller watches. */
  resources(): Kind[] {
    return this.#watched.map((i) => i.resource as Kind);
  }

  /** Enqueues one request by hand, at `priority` (default 0; higher first). */
  enqueue(request: ReconcileRequest, priority = 0): void {
    this.queue.add(objectKey(request), priority);
  }

  /**
   * Runs until `signal` aborts; resolves after the drain. Rejects with the `CacheError` `CacheSyncTimeout` if the
   * caches do not sync in time, and with a `UsageError` (`AlreadyStarted`) when called a second time.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new UsageError('AlreadyStarted', `controller ${this.name} was already started`);
    this.#started = true;
    const workers = this.#o.maxConcurrentReconciles ?? 1;
    this.#o.metrics?.initController(this.name, workers);
    this.#o.cache.start(signal);
    const timeoutMs = this.#o.cacheSyncTimeoutMs ?? DEFAULT_CACHE_SYNC_TIMEOUT_MS;
    const syncAbort = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
    const synced = await Promise.all(this.#watched.map((i) => i.waitForSync(syncAbort)));
    if (signal.aborted) return this.dispose();
    if (!synced.every(Boolean)) {
      this.dispose();
      const missing = this.#watched.filter((i) => !i.hasSynced).map((i) => i.resource.plural);
      const message = `controller ${this.name}: caches did not sync within ${timeoutMs / 1000} s (${missing.join(', ')})`;
      throw new CacheError('CacheSyncTimeout', message);
    }
    this.#log.info({ workers }, 'starting workers');
    const reconcileAbort = new AbortController();
    let resync: NodeJS.Timeout | undefined;
    if (this.#o.resyncPeriodMs && this.#primary) {
      const primary = this.#primary;
      resync = setInterval(() => {
        for (const key of primary.store.keys()) this.queue.add(key, LOW_PRIORITY);
      }, this.#o.resyncPeriodMs);
      resync.unref();
    }
    const loops = Array.from({ length: workers }, () => this.#worker(reconcileAbort.signal));
    await untilAborted(signal);
    clearInterval(resync);
    this.#log.info({ inFlight: this.#active }, 'stopping: draining in-flight reconciles');
    const drainMs = this.#o.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS;
    const timer = setTimeout(
      () => reconcileAbort.abort(new DOMException('the graceful shutdown timeout passed', 'AbortError')),
      drainMs,
    );
    await this.queue.shutDownWithDrain();
    clearTimeout(timer);
    await Promise.all(loops);
    if (this.#ownEvents) await this.#events.flush(drainMs);
    await this.#dynamic.stop();
    this.dispose();
  }

  /** Shuts its queue and removes its handlers from the informers (once); `start` does it when it ends. For a controller built but never started. */
  dispose(): void {
    this.queue.shutDown();
    for (const fn of this.#unwatch.splice(0)) fn();
  }

  async #worker(signal: AbortSignal): Promise<void> {
    for (;;) {
      const handed = await this.queue.getWithPriority();
      if (handed === undefined) return;
      const key = handed.item;
      this.#active += 1;
      this.#o.metrics?.activeWorkers.set({ controller: this.name }, this.#active);
      try {
        await this.#process(key, handed.priority, signal);
      } finally {
        this.#active -= 1;
        this.#o.metrics?.activeWorkers.set({ controller: this.name }, this.#active);
        this.queue.done(key);
      }
    }
  }

  /** Reconciles the request of `key`, handed out at `priority` (the priority it is queued at again, by default). */
  async #process(key: string, priority: number, stopping: AbortSignal): Promise<void> {
    const { gate } = this.#o;
    const fence = this.#fence;
    const obj = () => this.#primary?.store.get(key) ?? this.#tombstones.get(key);
    // without a gate every request is admitted, with no ticket; a fence that refuses drops it
    const answer = !passes(fence) ? undefined : gate ? gate.admit(key, obj()) : { ticket: undefined };
    if (answer && 'retryAfterMs' in answer) return this.queue.addAfter(key, answer.retryAfterMs, priority);
    if (!answer) {
      this.#tombstones.delete(key);
      this.queue.forget(key);
      return;
    }
    const ticket = 'signal' in answer ? answer : undefined;
    const signal = ticket ? AbortSignal.any([stopping, ticket.signal]) : stopping;
    try {
      await this.#admitted(key, priority, signal, { guard: allGuards(fence, ticket?.guard), labels: ticket?.labels });
    } finally {
      ticket?.end();
    }
  }

  /** The context of one reconcile of `key`, whose signal aborts with `signal` or at the deadline, if there is one. */
  #context(key: string, request: ReconcileRequest, signal: AbortSignal, { guard, labels }: Admission) {
    const reconcileID = randomUUID();
    const log = this.#log.child(logFields(request, reconcileID));
    const deps = { controller: this.name, clock: this.#o.clock ?? realClock, metrics: this.#o.metrics, log };
    const deadline = startDeadline(this.#o.reconcileTimeoutMs, signal, deps);
    const client = this.#o.client.withSignal(deadline?.signal ?? signal);
    const ctx: ReconcileContext = {
      log,
      cluster: this.#o.cluster ?? '',
      signal: deadline?.signal ?? signal,
      reconcileID,
      rawClient: guard ? client.withGuard(guard) : client,
      cache: this.#o.cache,
      events: this.#events,
      fieldManager: this.#o.fieldManager ?? this.name,
      expect: expectFor(this.expectations, key, this.#o.cache),
      shardLabels: labels ?? {},
      watchKinds: (kinds) => this.#dynamic.set(key, kinds, ctx.signal),
    };
    return { ctx, deadline };
  }

  async #admitted(key: string, priority: number, signal: AbortSignal, admission: Admission): Promise<void> {
    if (this.expectations.unsure(key)) {
      try {
        await this.expectations.resolve(key, signal); // creates without an answer: did they happen?
      } catch (err) {
        this.#log.warn({ key, err: messageOf(err) }, 'looking for a create without an answer failed: retrying');
        return this.queue.addRateLimited(key, priority);
      }
    }
    if (!this.expectations.satisfied(key)) {
      this.queue.addAfter(key, Math.min(1_000, Math.max(10, this.expectations.remainingMs(key))), priority);
      return;
    }
    const request = parseKey(key);
    const { ctx, deadline } = this.#context(key, request, signal, admission);
    const { log, reconcileID } = ctx;
    const m = this.#o.metrics;
    const tracer = runtimeTracer();
    const span =
      tracer &&
      startReconcileSpan(tracer, {
        controller: this.name,
        key,
        namespace: request.namespace,
        name: request.name,
        reconcileID,
        queueWaitMs: this.queue.waitedMs(key),
        annotations: this.#o.traceContextFromAnnotations
          ? this.#primary?.store.get(key)?.metadata.annotations
          : undefined,
      });
    const started = performance.now();
    // biome-ignore lint/suspicious/noConfusingVoidType: what a reconciler may return
    let result: Result | undefined | void;
    deadline?.arm();
    try {
      result = await (span
        ? withActiveSpan(span, this.#reconciler.reconcile, this.#reconciler, request, ctx)
        : this.#reconciler.reconcile(request, ctx));
      refuseRenamedFields(result);
      deadline?.settle(undefined);
    } catch (thrown) {
      const err = deadline ? deadline.settle(thrown) : thrown;
      m?.reconcileTime.observe({ controller: this.name }, (performance.now() - started) / 1000);
      if (span) endReconcileSpan(span, { failed: true, error: err });
      const sink = { controller: this.name, queue: this.queue, metrics: m, policy: this.#o.errorPolicy };
      handleFailure(sink, { key, priority, err, stopping: signal.aborted }, log, ctx);
      return this.#dynamic.settled(key);
    }
    const seconds = (performance.now() - started) / 1000;
    m?.reconcileTime.observe({ controller: this.name }, seconds);
    const requeue = result?.requeueAfterMs ? { requeueAfterMs: result.requeueAfterMs } : {};
    log.debug({ durationMs: Math.round(seconds * 1000), ...requeue }, 'reconciled');
    if (span) endReconcileSpan(span, { requeueAfterMs: result?.requeueAfterMs });
    this.queue.forget(key);
    this.#tombstones.delete(key);
    this.#dynamic.settled(key);
    if (result?.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
      m?.reconcileTotal.inc({ controller: this.name, result: 'requeue_after' });
      this.queue.addAfter(key, result.requeueAfterMs, requeuePriority(result, priority, log));
    } else {
      m?.reconcileTotal.inc({ controller: this.name, result: 'success' });
    }
  }
}
