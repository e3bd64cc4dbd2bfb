/**
 * @module metrics
 * Prometheus metrics with controller-runtime's names and labels, so existing dashboards work, plus watch health per
 * informer (opkit's own). One `Metrics` per process holds a `Registry` (prometheus.ts; an operator's own metrics go
 * there too: `metrics.registry.counter({...})`); runtime parts report through the small hook interfaces they declare
 * (RequestMetrics, WorkQueueMetrics, WatchMetrics), which `Metrics` implements.
 */

import type { RequestMetrics } from './client/transport.ts';
import { estimatedBytes } from './internal/size.ts';
import { type Counter, type Gauge, type Histogram, Registry } from './prometheus.ts';
import { registerProcessMetrics } from './prometheus-process.ts';
import type { WorkQueueMetrics } from './workqueue/index.ts';

/** Watch health of one informer. */
export interface WatchMetrics {
  /** A watch ended and is started again (`reason`: timeout, inactivity, error, gone). */
  restarted(reason: string): void;
  /** A full list replaced the store. */
  relisted(): void;
  /** An event or bookmark arrived. */
  event(type: string): void;
  /** A list or watch failed (reported, then retried with backoff). */
  failed(code: string): void;
  /** The cache was found stale: behind the apiserver too long, and its relist changed it. */
  stale?(): void;
}

const QUEUE_BUCKETS = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];
const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 1.75, 2,
  2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

/**
 * The process's Prometheus metrics, with controller-runtime's names and labels (reconciles, work queues, REST client,
 * leader election) plus watch health per informer; the runtime's parts report through it.
 */
export class Metrics {
  /** The registry they live in; add the operator's own metrics here (`metrics.registry.counter({...})`). */
  readonly registry: Registry;
  /**
   * `controller_runtime_reconcile_total`: reconciles per controller and result (`success`, `error`, `requeue`,
   * `requeue_after`).
   */
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  /** `controller_runtime_reconcile_errors_total`: failed reconciles per controller. */
  readonly reconcileErrors: Counter<'controller'>;
  /**
   * `controller_runtime_terminal_reconcile_errors_total`: reconciles that failed with a `TerminalError`, per
   * controller.
   */
  readonly terminalReconcileErrors: Counter<'controller'>;
  /** `controller_runtime_reconcile_timeouts_total`: reconciles that ran past `reconcileTimeoutMs`, per controller. */
  readonly reconcileTimeouts: Counter<'controller'>;
  /** `controller_runtime_reconcile_time_seconds`: how long reconciles take, per controller. */
  readonly reconcileTime: Histogram<'controller'>;
  /** `controller_runtime_max_concurrent_reconciles`: each controller's number of workers. */
  readonly maxConcurrentReconciles: Gauge<'controller'>;
  /** `controller_runtime_active_workers`: workers reconciling now, per controller. */
  readonly activeWorkers: Gauge<'controller'>;
  /** `rest_client_requests_total`: requests to the apiserver by status code, method and host. */
  readonly restRequests: Counter<'code' | 'method' | 'host'>;
  /** `rest_client_request_duration_seconds`: request latency by verb and host. */
  readonly restLatency: Histogram<'verb' | 'host'>;
  /** `leader_election_master_status`: 1 while this process leads the named Lease, else 0. */
  readonly leaderStatus: Gauge<'name'>;
  readonly #queue: ReturnType<typeof queueSeries>;
  readonly #watch: ReturnType<typeof watchSeries>;
  readonly #lastEventAt = new Map<string, number>();
  readonly #queueProbes = new Map<string, () => { unfinished: number; longest: number }>();

  constructor(options: { registry?: Registry; processMetrics?: boolean } = {}) {
    this.registry = options.registry ?? new Registry();
    const r = this.registry;
    if (options.processMetrics ?? true) registerProcessMetrics(r);
    const reconcile = reconcileSeries(r);
    this.reconcileTotal = reconcile.total;
    this.reconcileErrors = reconcile.errors;
    this.terminalReconcileErrors = reconcile.terminalErrors;
    this.reconcileTimeouts = reconcile.timeouts;
    this.reconcileTime = reconcile.time;
    this.maxConcurrentReconciles = reconcile.maxConcurrent;
    this.activeWorkers = reconcile.activeWorkers;
    this.#queue = queueSeries(r, this.#queueProbes);
    this.restRequests = r.counter({
      name: 'rest_client_requests_total',
      help: 'Number of HTTP requests, partitioned by status code, method, and host',
      labelNames: ['code', 'method', 'host'],
    });
    this.restLatency = r.histogram({
      name: 'rest_client_request_duration_seconds',
      help: 'Request latency in seconds, broken down by verb and host',
      labelNames: ['verb', 'host'],
      buckets: [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60],
    });
    this.leaderStatus = r.gauge({
      name: 'leader_election_master_status',
      help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
      labelNames: ['name'],
    });
    this.#watch = watchSeries(r, this.#lastEventAt);
  }

  /**
   * Reports `opkit_cache_objects{resource}` — the objects each informer holds — and `opkit_cache_bytes{resource}` —
   * their estimated size as JSON (internal/size.ts) — from `informers` (by informer key), read when scraped: an
   * informer that stopped (a dynamic watch released it) has no series.
   */
  cacheObjects(informers: () => Iterable<[string, { readonly store: CachedObjects }]>): void {
    this.registry.gauge({
      name: 'opkit_cache_objects',
      help: 'Objects held in the cache per resource (a sharded replica holds only its buckets)',
      labelNames: ['resource'],
      collect: (g) => {
        const sizes = [...informers()].map(([resource, inf]) => [resource, inf.store.size] as const);
        g.reset();
        for (const [resource, size] of sizes) g.set({ resource }, size);
      },
    });
    this.registry.gauge({
      name: 'opkit_cache_bytes',
      help: 'Estimated size of the objects held in the cache per resource, as JSON (a sample of them, times their number)',
      labelNames: ['resource'],
      collect: (g) => {
        // computed first: a throw leaves the last values, as a failing collect does
        const bytes = [...informers()].map(
          ([r, inf]) => [r, estimatedBytes(inf.store.values(), inf.store.size)] as const,
        );
        g.reset();
        for (const [resource, size] of bytes) g.set({ resource }, size);
      },
    });
  }

  /** Hooks for the REST client. */
  requests(): RequestMetrics {
    return {
      request: (code, method, host, seconds) => {
        this.restRequests.inc({ code, method, host });
        this.restLatency.observe({ verb: method, host }, seconds);
      },
    };
  }

  /** Hooks for one controller's work queue (`name` = the controller's name, as controller-runtime labels it). */
  queue(name: string, probe: () => { unfinished: number; longest: number }): WorkQueueMetrics {
    const labels = { name, controller: name };
    this.#queueProbes.set(name, probe);
    // Series exist from the start (at 0), as controller-runtime's do, so dashboards and alerts see them.
    this.#queue.depth.set(labels, 0);
    this.#queue.adds.inc(labels, 0);
    this.#queue.retries.inc(labels, 0);
    return {
      depth: (n) => this.#queue.depth.set(labels, n),
      added: () => this.#queue.adds.inc(labels),
      queueLatency: (s) => this.#queue.latency.observe(labels, s),
      workDuration: (s) => this.#queue.work.observe(labels, s),
      retried: () => this.#queue.retries.inc(labels),
    };
  }

  /** Creates a controller's series at 0 (results success, error, requeue, requeue_after; errors; timeouts; workers). */
  initController(controller: string, workers: number): void {
    for (const result of ['success', 'error', 'requeue', 'requeue_after'])
      this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.terminalReconcileErrors.inc({ controller }, 0);
    this.reconcileTimeouts.inc({ controller }, 0);
    this.maxConcurrentReconciles.set({ controller }, workers);
    this.activeWorkers.set({ controller }, 0);
  }

  /** Hooks for one informer's watch (`resource` like `pods` or `appservices.app.example.com`). */
  watch(resource: string): WatchMetrics {
    this.#lastEventAt.set(resource, Date.now());
    return {
      restarted: (reason) => this.#watch.restarts.inc({ resource, reason }),
      relisted: () => {
        this.#watch.relists.inc({ resource });
        this.#lastEventAt.set(resource, Date.now());
      },
      event: (type) => {
        this.#watch.events.inc({ resource, type });
        this.#lastEventAt.set(resource, Date.now());
      },
      failed: (code) => this.#watch.errors.inc({ resource, code }),
      stale: () => this.#watch.stale.inc({ resource }),
    };
  }

  /**
   * An informer of `resource` stopped for good (a dynamic watch released it): its seconds-since-last-event series goes,
   * so it does not grow like a hung watch's. Its counters stay, as counters do.
   */
  forgetWatch(resource: string): void {
    this.#lastEventAt.delete(resource);
  }

  /** The exposition text (for /metrics). */
  text(): string {
    return this.registry.metrics();
  }
}

/** What the cache metrics read of an informer's store. */
interface CachedObjects {
  readonly size: number;
  values(): Iterable<unknown>;
}

/** The reconcile series, per controller. */
function reconcileSeries(r: Registry) {
  const total = r.counter({
    name: 'controller_runtime_reconcile_total',
    help: 'Total number of reconciliations per controller',
    labelNames: ['controller', 'result'],
  });
  const errors = r.counter({
    name: 'controller_runtime_reconcile_errors_total',
    help: 'Total number of reconciliation errors per controller',
    labelNames: ['controller'],
  });
  const terminalErrors = r.counter({
    name: 'controller_runtime_terminal_reconcile_errors_total',
    help: 'Total number of terminal reconciliation errors per controller',
    labelNames: ['controller'],
  });
  const timeouts = r.counter({
    name: 'controller_runtime_reconcile_timeouts_total',
    help: 'Total number of reconciliation timeouts per controller',
    labelNames: ['controller'],
  });
  const time = r.histogram({
    name: 'controller_runtime_reconcile_time_seconds',
    help: 'Length of time per reconciliation per controller',
    labelNames: ['controller'],
    buckets: RECONCILE_BUCKETS,
  });
  const maxConcurrent = r.gauge({
    name: 'controller_runtime_max_concurrent_reconciles',
    help: 'Maximum number of concurrent reconciles per controller',
    labelNames: ['controller'],
  });
  const activeWorkers = r.gauge({
    name: 'controller_runtime_active_workers',
    help: 'Number of currently used workers per controller',
    labelNames: ['controller'],
  });
  return { total, errors, terminalErrors, timeouts, time, maxConcurrent, activeWorkers };
}

/** The work queue series, per queue; `probes` report each queue's unfinished work and longest running processor. */
function queueSeries(r: Registry, probes: ReadonlyMap<string, () => { unfinished: number; longest: number }>) {
  const queue = { labelNames: ['name', 'controller'] as const };
  const depth = r.gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', ...queue });
  const adds = r.counter({
    name: 'workqueue_adds_total',
    help: 'Total number of adds handled by workqueue',
    ...queue,
  });
  const latency = r.histogram({
    name: 'workqueue_queue_duration_seconds',
    help: 'How long in seconds an item stays in workqueue before being requested',
    buckets: QUEUE_BUCKETS,
    ...queue,
  });
  const work = r.histogram({
    name: 'workqueue_work_duration_seconds',
    help: 'How long in seconds processing an item from workqueue takes',
    buckets: QUEUE_BUCKETS,
    ...queue,
  });
  const retries = r.counter({
    name: 'workqueue_retries_total',
    help: 'Total number of retries handled by workqueue',
    ...queue,
  });
  r.gauge({
    name: 'workqueue_unfinished_work_seconds',
    help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration',
    ...queue,
    collect: (g) => {
      for (const [name, probe] of probes) g.set({ name, controller: name }, probe().unfinished);
    },
  });
  r.gauge({
    name: 'workqueue_longest_running_processor_seconds',
    help: 'How many seconds has the longest running processor for workqueue been running',
    ...queue,
    collect: (g) => {
      for (const [name, probe] of probes) g.set({ name, controller: name }, probe().longest);
    },
  });
  return { depth, adds, latency, work, retries };
}

/** The watch health series, per informer; `lastEventAt` is when each resource's watch last heard from the server. */
function watchSeries(r: Registry, lastEventAt: ReadonlyMap<string, number>) {
  const restarts = r.counter({
    name: 'opkit_watch_restarts_total',
    help: 'Watches restarted per resource, by reason (timeout, inactivity, error, gone)',
    labelNames: ['resource', 'reason'],
  });
  const relists = r.counter({
    name: 'opkit_watch_relists_total',
    help: 'Full lists that replaced an informer store, per resource',
    labelNames: ['resource'],
  });
  const events = r.counter({
    name: 'opkit_watch_events_total',
    help: 'Watch events and bookmarks received per resource and type',
    labelNames: ['resource', 'type'],
  });
  const errors = r.counter({
    name: 'opkit_watch_errors_total',
    help: 'Failed lists and watches per resource and error code (each is retried with backoff)',
    labelNames: ['resource', 'code'],
  });
  const stale = r.counter({
    name: 'opkit_watch_stale_total',
    help: 'Caches found stale per resource: behind the apiserver longer than the stale bound, and their relist changed them',
    labelNames: ['resource'],
  });
  r.gauge({
    name: 'opkit_watch_seconds_since_last_event',
    help: 'Seconds since the last watch event or bookmark per resource (a healthy watch stays below ~60 s)',
    labelNames: ['resource'],
    collect: (g) => {
      const now = Date.now();
      g.reset();
      for (const [resource, at] of lastEventAt) g.set({ resource }, (now - at) / 1000);
    },
  });
  return { restarts, relists, events, errors, stale };
}

export { Counter, Gauge, Histogram, type Labels, type MetricOptions, Registry } from './prometheus.ts';
