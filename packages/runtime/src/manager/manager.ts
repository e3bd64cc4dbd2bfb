/**
 * @module manager/manager
 * The Manager owns what an operator process runs: the client, the shared cache, the controllers (and any other
 * runnables), leader election, the metrics server and the health probes.
 *
 * `start(signal)`: serve /metrics, /healthz and /readyz (on every replica) → check that every watched resource is
 * served (a missing CRD fails at once, naming it) → start the cache (standbys keep warm caches) → campaign for the
 * Lease when leader election is on → run the controllers while leading. `/readyz` passes once every informer has
 * synced.
 *
 * An apiserver that cannot be reached for 30 s at start is fatal too (`ApiUnreachable`).
 *
 * A graceful stop (the signal aborts, or SIGTERM/SIGINT under `run()`) goes in phases, as controller-runtime's, that
 * share a budget of twice `gracefulShutdownTimeoutMs` (2 s) plus 1 s (only the Lease release, whose requests have
 * their own 5 s timeout, and the `onStopped` hooks can add to it):
 * 1. `/readyz` fails at once (its `shutdown` check), so the Service stops routing new calls here; `/healthz` passes.
 * 2. The controllers and the other runnables stop taking work; in-flight reconciles get `gracefulShutdownTimeoutMs` to
 *    finish, then their `ctx.signal` aborts with their requests (level-triggered: the successor redoes whatever was cut
 *    short); a runnable that has still not returned 1 s later is left behind.
 * 3. The Lease is released (a standby takes over within its retry period, so a handover takes under 3 s even with a
 *    reconcile stuck on a hung request).
 * 4. Events still being written get the drain time again (within the budget), then are cancelled. Meanwhile the
 *    webhook server keeps accepting calls until `gracefulShutdownTimeoutMs` has passed since the stop began — time for
 *    the endpoints to drop this replica, which a rolling update does while the replica already has its SIGTERM.
 * 5. The caches stop (the webhook handlers read them until then).
 * 6. The webhook server (and any runnable that `serves`) stops: no new connections; calls under way are answered
 *    until the budget is spent.
 * 7. The metrics and health servers close.
 * So calls routed to a replica that is stopping are answered until its listener closes, not refused. Every step runs
 * even if an earlier one failed; then `start` rejects with `StopFailed` (the failures as its `cause`). A runnable that
 * rejects once the stop has begun does not cut the stop short: an abort of its own signal (an `AbortError`) is a
 * normal end, any other error one of those failures. Fatal errors — caches that never sync, a lost Lease, a controller that fails — stop everything at once,
 * the servers included (runnables get 1 s to return once their signal has aborted), Event writes too; `start` rejects
 * with a `ManagerError` and `run()` exits 1 with a one-line reason. Either way the `onStopped` hooks run last, just
 * before `start` settles: the place to shut down a tracing provider.
 */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { Cache, type CacheOptions } from '../cache/cache.ts';
import { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type KubeObject, type ResourceType, resourceId } from '../client/resource.ts';
import { type BuilderOptions, ControllerBuilder, type ControllerBuilderFor } from '../controller/builder.ts';
import { type Controller, DEFAULT_DRAIN_TIMEOUT_MS } from '../controller/controller.ts';
import type { Predicate } from '../controller/predicates.ts';
import { OpkitError } from '../errors.ts';
import { EventRecorder } from '../helpers/events.ts';
import { sleep } from '../internal/sleep.ts';
import { createLogger, type Logger } from '../logger.ts';
import { Metrics } from '../metrics.ts';
import { FileCertificates } from '../tls/sources.ts';
import { detachedFromTrace } from '../tracing/spans.ts';
import { WebhookServer, type WebhookServerOptions } from '../webhook/server.ts';
import { LeaderElector } from './leader.ts';
import { MetricsAuthError } from './metricsauth.ts';
import { type MetricsServingOptions, metricsServer } from './metricsserving.ts';
import { type Check, CheckSet, HttpEndpoints } from './server.ts';

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's (manager/leader.ts): only the replica holding
 * the Lease runs the controllers. The timings must satisfy leaseDuration > renewDeadline > 1.2 × retryPeriod, else
 * `start()` rejects with a `RangeError`.
 */
export interface LeaderElectionSettings {
  /** Campaign for the Lease before running the controllers (default false: they run on every replica). */
  readonly enabled?: boolean;
  /** Namespace of the Lease (default: $POD_NAMESPACE, else the client's namespace). */
  readonly namespace?: string;
  /** Name of the Lease (default `<manager name>-leader`). */
  readonly leaseName?: string;
  /** Default: the instance name (`$POD_NAME`, else the hostname) + a random suffix. */
  readonly identity?: string;
  /** How long a standby waits, after it last saw the Lease change, before taking it over (default 15 s). */
  readonly leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it stops with `LeaderElectionLost` (default 10 s). */
  readonly renewDeadlineMs?: number;
  /** How often the leader renews, and a standby tries to acquire (stretched at random by up to 1.2×) (default 2 s). */
  readonly retryPeriodMs?: number;
}

/** What `Manager.create` (and the constructor) take; every field but `name` has a default. */
export interface ManagerOptions {
  /** The operator's name: user agent, default Lease name, Event source. */
  readonly name: string;
  /**
   * The client every part of the manager uses (`Manager.create` makes one from `kubeconfig` when it is absent; the
   * constructor requires it).
   */
  readonly client?: Client;
  /** Kubeconfig file and context when no client is given (default: as kubectl, or in-cluster). */
  readonly kubeconfig?: { readonly path?: string; readonly context?: string };
  /** Where the manager and its parts log (default: JSON lines at `info` on stderr, with `name`). */
  readonly log?: Logger;
  /** Leader election (default off). */
  readonly leaderElection?: LeaderElectionSettings;
  /** How /metrics is served: HTTPS with authn/authz on `:8443` by default (see manager/metricsserving.ts). */
  readonly metrics?: MetricsServingOptions;
  /** `host:port`, `:port`, or `0` to disable (default `:8081`). */
  readonly health?: { readonly bindAddress?: string };
  /** Options of the shared cache (which namespaces, transforms, per-resource settings); default: every namespace. */
  readonly cache?: Omit<CacheOptions, 'client' | 'log' | 'metrics'>;
  /** Defaults of the controllers built with `controller()` (`withOptions` overrides them); start and stop timings. */
  readonly controllers?: {
    /** Workers per controller (default 1). */
    readonly maxConcurrentReconciles?: number;
    /** How long a controller's informers may take to sync, else `start()` fails: `CacheSyncTimeout` (default 2 min). */
    readonly cacheSyncTimeoutMs?: number;
    /** How long to keep trying to reach the apiserver at start before failing (default 30 s). */
    readonly apiReachableTimeoutMs?: number;
    /**
     * Time in-flight reconciles get on shutdown before their signal aborts (default 2 s); also how long the webhook
     * server keeps accepting calls after a stop began. The phases of a graceful stop share a budget of twice this
     * plus 1 s (see the module comment).
     */
    readonly gracefulShutdownTimeoutMs?: number;
    /** Link reconcile spans to the W3C trace context in objects' `opkit.dev/traceparent` annotation (default off). */
    readonly traceContextFromAnnotations?: boolean;
  };
  /** The webhook server (started on every replica once `webhookServer` is used): `:9443`, certificates from `certDir`
   * (default `/tmp/k8s-webhook-server/serving-certs`, as kubebuilder) unless `certificates` is given. */
  readonly webhook?: Partial<WebhookServerOptions> & { readonly certDir?: string };
}

/** How long past the drain time a graceful stop still waits for runnables to return. */
const DRAIN_MARGIN_MS = 1_000;
/** How long `start()` waits for each `onStopped` hook (an OTLP exporter's own request timeout is 10 s). */
const STOPPED_HOOK_TIMEOUT_MS = 10_000;

/**
 * `ApiUnreachable`: the apiserver could not be reached within `apiReachableTimeoutMs` at start; `CacheSyncTimeout`: a
 * controller's informers did not sync within `cacheSyncTimeoutMs`; `LeaderElectionLost`: the Lease could not be
 * renewed within `renewDeadlineMs`; `ResourceNotServed`: a watched resource is not served (a CRD not installed);
 * `RunnableFailed`: a controller or other runnable threw (its error is the `cause`); `BindFailed`: the metrics or
 * health server cannot listen; `CertificateUnreadable`: the metrics serving certificate cannot be read;
 * `StopFailed`: a step of a graceful stop failed (the error, or an `AggregateError` of several, is the `cause`).
 */
export type ManagerErrorCode =
  | 'ApiUnreachable'
  | 'CacheSyncTimeout'
  | 'LeaderElectionLost'
  | 'ResourceNotServed'
  | 'RunnableFailed'
  | 'BindFailed'
  | 'CertificateUnreadable'
  | 'StopFailed';

/** Why `start()` rejected (`run()` prints its message and exits 1); `code` says which. */
export class ManagerError extends OpkitError<ManagerErrorCode> {
  override readonly name = 'ManagerError';
}

/** Anything the manager runs: started with a signal, resolves when stopped. */
export interface Runnable {
  /**
   * Runs until `signal` aborts, then resolves once it has stopped; a rejection is fatal to the manager
   * (`RunnableFailed`, or `CacheSyncTimeout` when its error has that code).
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

function isServing(r: Runnable): boolean {
  return r instanceof WebhookServer || r.serves === true;
}

/** True when `work` settles within `ms`, false if the time ran out first (the work goes on, unawaited). */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  const cap = new AbortController();
  const settled = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    sleep(ms, cap.signal).then(() => false),
  ]);
  cap.abort();
  return settled;
}

/**
 * Runs an operator: make one with `Manager.create`, register controllers with `controller()` (and other runnables
 * with `add`), then `run()` in a process's main, or `start(signal)` (see the module comment for the order of start
 * and the phases of a stop).
 */
export class Manager {
  /** The operator's name (`ManagerOptions.name`). */
  readonly name: string;
  /** The client every controller, the cache, leader election and the Event recorders use. */
  readonly client: Client;
  /** The shared cache: the informers of every controller (`ctx` reads come from it); started by `start()`. */
  readonly cache: Cache;
  /** The metrics served at `/metrics` (controller-runtime's names); the operator's own go in `metrics.registry`. */
  readonly metrics: Metrics;
  /** The manager's logger (`ManagerOptions.log`); its parts log to children of it. */
  readonly log: Logger;
  readonly #o: ManagerOptions;
  readonly #runnables: Runnable[] = [];
  readonly #controllers: Controller[] = [];
  readonly #healthz = new CheckSet('/healthz');
  readonly #readyz = new CheckSet('/readyz');
  readonly #recorders = new Map<string, EventRecorder>();
  #servers: HttpEndpoints[] = [];
  #releaseMetrics: () => void = () => {};
  #metricsServer: HttpEndpoints | undefined;
  #healthServer: HttpEndpoints | undefined;
  #elector: LeaderElector | undefined;
  #started = false;
  /** Set when a stop begins: readiness fails from then on. */
  #stopping = false;
  #webhookServer: WebhookServer | undefined;
  readonly #stopped: { readonly fn: () => Promise<void> | void; readonly timeoutMs: number }[] = [];

  /** Prefer `Manager.create`, which also wires the client's request metrics. */
  constructor(options: ManagerOptions & { client: Client; metricsRegistry?: Metrics }) {
    this.#o = options;
    this.name = options.name;
    this.client = options.client;
    this.log = options.log ?? createLogger({ name: options.name });
    this.metrics = options.metricsRegistry ?? new Metrics();
    this.cache = new Cache({ ...options.cache, client: this.client, log: this.log, metrics: this.metrics });
    this.#healthz.add('ping', () => {});
    this.#readyz.add('shutdown', () => {
      if (this.#stopping) throw new Error('stopping: the manager is shutting down');
    });
    this.#readyz.add('informers', () => {
      if (!this.cache.started) throw new Error('the cache has not started');
      const pending = this.cache.informers().filter((i) => !i.hasSynced);
      if (pending.length > 0) throw new Error(`not synced: ${pending.map((i) => resourceId(i.resource)).join(', ')}`);
    });
  }

  /** Time in-flight reconciles get on shutdown before their signal aborts. */
  get #drainMs(): number {
    return this.#o.controllers?.gracefulShutdownTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  }

  /**
   * A manager with a client from `options.client`, or the kubeconfig (as kubectl), or the in-cluster config; a client
   * made here reports `rest_client_requests_total` and names the replica in its user agent
   * (`opkit/<v> (<operator>; <instance>)`), so audit logs tell replicas apart.
   */
  static async create(options: ManagerOptions): Promise<Manager> {
    const metrics = new Metrics();
    const client =
      options.client ??
      (await Client.create({
        name: `${options.name}; ${instanceName()}`,
        metrics: metrics.requests(),
        ...(options.kubeconfig?.path ? { path: options.kubeconfig.path } : {}),
        ...(options.kubeconfig?.context ? { context: options.kubeconfig.context } : {}),
      }));
    return new Manager({ ...options, client, metricsRegistry: metrics });
  }

  /**
   * A controller builder whose controller this manager runs (on the leader); with a kind, for that kind (as
   * `.for(kind, ...predicates)`). Its Events (`ctx.events`) come from this manager's recorder.
   */
  controller(): ControllerBuilder;
  controller<T extends KubeObject>(
    kind: ResourceType<T, unknown>,
    ...predicates: NoInfer<Predicate<T>>[]
  ): ControllerBuilderFor<T>;
  controller<T extends KubeObject>(
    kind?: ResourceType<T, unknown>,
    ...predicates: NoInfer<Predicate<T>>[]
  ): ControllerBuilder | ControllerBuilderFor<T> {
    const defaults: BuilderOptions = {
      ...(this.#o.controllers?.maxConcurrentReconciles
        ? { maxConcurrentReconciles: this.#o.controllers.maxConcurrentReconciles }
        : {}),
      ...(this.#o.controllers?.cacheSyncTimeoutMs
        ? { cacheSyncTimeoutMs: this.#o.controllers.cacheSyncTimeoutMs }
        : {}),
      drainTimeoutMs: this.#drainMs,
      ...(this.#o.controllers?.traceContextFromAnnotations ? { traceContextFromAnnotations: true } : {}),
      events: this.eventRecorder(),
      fieldManager: this.name,
    };
    const builder = new ControllerBuilder({
      client: this.client,
      cache: this.cache,
      log: this.log,
      metrics: this.metrics,
      defaults,
      register: (c) => {
        this.#controllers.push(c);
        this.add(c);
      },
    });
    return kind ? builder.for(kind, ...predicates) : builder;
  }

  /** Adds a runnable that `start()` runs (see `Runnable`); throws an `Error` once `start()` was called. */
  add(runnable: Runnable): void {
    if (this.#started) throw new Error('add runnables before start()');
    this.#runnables.push(runnable);
  }

  /**
   * Runs `fn` when `start()` ends, gracefully or not: after the controllers drained (or, after a fatal error, were
   * cut off), Events were flushed and the servers closed — the last thing before `start()` settles and `run()` exits.
   * The place to flush and shut down what must see everything the operator did, such as a tracing SDK's provider.
   * Hooks run one after another in the order added; one that fails is logged, one that takes longer than `timeoutMs`
   * (default 10 s) is left behind with a warning, and neither stops the others.
   */
  onStopped(fn: () => Promise<void> | void, options: { timeoutMs?: number } = {}): void {
    this.#stopped.push({ fn, timeoutMs: options.timeoutMs ?? STOPPED_HOOK_TIMEOUT_MS });
  }

  async #runStoppedHooks(): Promise<void> {
    for (const { fn, timeoutMs } of this.#stopped.splice(0)) {
      const cap = new AbortController();
      const outcome = await Promise.race([
        Promise.resolve()
          .then(fn)
          .then(
            () => 'done' as const,
            (err: unknown) => {
              this.log.warn({ err: describe(err) }, 'an onStopped hook failed');
              return 'failed' as const;
            },
          ),
        sleep(timeoutMs, cap.signal).then(
          () => 'late' as const,
          () => 'late' as const,
        ),
      ]);
      cap.abort();
      if (outcome === 'late') this.log.warn({ timeoutMs }, 'an onStopped hook is still running: not waiting longer');
    }
  }

  /**
   * Adds a liveness check: `/healthz` answers 500 while it throws or rejects (with `[-]<name> failed: <message>`), and
   * `/healthz/<name>` runs it alone. Throws an `Error` when a check of that name exists (`ping` is built in).
   */
  addHealthzCheck(name: string, check: Check): void {
    this.#healthz.add(name, check);
  }

  /**
   * Adds a readiness check, as `addHealthzCheck` for `/readyz`; built in: `shutdown` (fails once a stop began),
   * `informers` (every informer synced) and `webhook` (once `webhookServer` is used).
   */
  addReadyzCheck(name: string, check: Check): void {
    this.#readyz.add(name, check);
  }

  /** An EventRecorder with `component` (default: the manager's name) as the Events' source. */
  eventRecorder(component = this.name): EventRecorder {
    let r = this.#recorders.get(component);
    if (!r) {
      r = new EventRecorder({ client: this.client, component, log: this.log.child({ component: 'events' }) });
      this.#recorders.set(component, r);
    }
    return r;
  }

  /** The webhook server, created and added (with a readiness check) on first use. */
  get webhookServer(): WebhookServer {
    if (!this.#webhookServer) {
      const { certDir, ...o } = this.#o.webhook ?? {};
      const certificates =
        o.certificates ??
        new FileCertificates({ dir: certDir ?? '/tmp/k8s-webhook-server/serving-certs', purpose: 'webhook' });
      this.#webhookServer = new WebhookServer({
        log: this.log.child({ component: 'webhook' }),
        registry: this.metrics.registry,
        ...o,
        certificates,
      });
      this.add(this.#webhookServer);
      this.addReadyzCheck('webhook', this.#webhookServer.ready);
    }
    return this.#webhookServer;
  }

  /** True while this replica holds the Lease; without leader election, true from `start()` on. */
  get isLeader(): boolean {
    return this.#o.leaderElection?.enabled ? (this.#elector?.isLeader ?? false) : this.#started;
  }

  /** `host:port` the metrics server listens on (after start). */
  get metricsAddress(): string | undefined {
    return this.#metricsServer?.address;
  }

  /** `host:port` the health server (`/healthz`, `/readyz`) listens on (after start; undefined when off). */
  get healthAddress(): string | undefined {
    return this.#healthServer?.address;
  }

  /**
   * Runs until `signal` aborts (then stops in phases, see the module comment, and resolves) or a fatal error (rejects
   * with it). Every step of the stop runs even when an earlier one failed; a step that failed makes a graceful stop
   * reject with `StopFailed` once all have run (its `cause`: the error, or an `AggregateError` of several).
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new Error('a manager starts once');
    this.#started = true;
    const log = this.log;
    const fatal = new AbortController();
    let fatalError: ManagerError | undefined;
    const fail = (err: ManagerError) => {
      if (fatalError) return;
      fatalError = err;
      log.error({ code: err.code }, err.message);
      fatal.abort(err);
    };
    try {
      await this.#startServers();
    } catch (err) {
      await this.#runStoppedHooks();
      throw err;
    }
    const cacheStop = new AbortController();
    const runStop = new AbortController();
    const electorStop = new AbortController();
    const serveStop = new AbortController();
    const stopAll = AbortSignal.any([signal, fatal.signal]);
    // readiness fails from the first moment of a stop, so the Service stops routing new calls here
    let stopBegan = Number.POSITIVE_INFINITY;
    const onStop = () => {
      this.#stopping = true;
      stopBegan = performance.now();
      if (fatalError) return;
      for (const r of this.#runnables.filter(isServing)) {
        try {
          r.drain?.();
        } catch (err) {
          log.warn({ err: describe(err) }, 'stopping: a server could not start draining');
        }
      }
    };
    if (stopAll.aborted) onStop();
    else stopAll.addEventListener('abort', onStop, { once: true });
    const running: Promise<void>[] = [];
    const serving: Promise<void>[] = [];
    const problems: unknown[] = [];
    /** One step of the stop: its failure is kept (and logged), and the next steps run anyway. */
    const step = async (what: string, fn: () => Promise<unknown> | unknown): Promise<void> => {
      try {
        await fn();
      } catch (err) {
        log.error({ err: describe(err) }, `stopping: ${what} failed`);
        problems.push(err);
      }
    };
    let electing: Promise<void> = Promise.resolve();
    /** The try block ended without an error of its own (a stop, early or after running). */
    let ended = false;
    try {
      await this.#checkServed(stopAll);
      if (stopAll.aborted) {
        // stopped (or failed) before anything ran: the finally block still stops the servers
        if (fatalError) throw fatalError;
        log.info({}, 'stopped before the controllers started');
        ended = true;
        return;
      }
      // the caches, leader election and the runnables are long-lived: none nests under a span active at start()
      detachedFromTrace(() => this.cache.start(cacheStop.signal));
      const launch = (r: Runnable, s: AbortSignal, into: Promise<void>[]) =>
        into.push(
          detachedFromTrace(() => r.start(s)).catch((err: unknown) => {
            if (stopAll.aborted && !fatalError) {
              // once a graceful stop has begun a runnable's error no longer stops everything at once (as
              // controller-runtime: it is logged after the stop sequence is engaged): one that ends with its own
              // signal's abort ended normally; any other error is a problem of the stop (StopFailed at its end)
              if (s.aborted && (err === s.reason || (err instanceof Error && err.name === 'AbortError'))) return;
              log.error({ err: describe(err) }, 'stopping: a runnable failed after the stop began');
              problems.push(err);
              return;
            }
            const code = (err as { code?: string }).code === 'CacheSyncTimeout' ? 'CacheSyncTimeout' : 'RunnableFailed';
            fail(new ManagerError(code, (err as Error).message ?? String(err), { cause: err }));
          }),
        );
      // servers answer what is routed here until the rest has stopped (or at once after a fatal error)
      for (const r of this.#runnables.filter(isServing))
        launch(r, AbortSignal.any([serveStop.signal, fatal.signal]), serving);
      for (const r of this.#runnables.filter((x) => x.needLeaderElection === false && !isServing(x)))
        launch(r, AbortSignal.any([stopAll, runStop.signal]), running);
      const leaderRunnables = this.#runnables.filter((x) => x.needLeaderElection !== false && !isServing(x));
      const le = this.#o.leaderElection;
      if (le?.enabled) {
        const namespace = le.namespace ?? process.env.POD_NAMESPACE ?? this.client.defaultNamespace;
        const leaseName = le.leaseName ?? `${this.name}-leader`;
        this.#elector = new LeaderElector({
          client: this.client,
          namespace,
          name: leaseName,
          identity: le.identity ?? `${instanceName()}_${randomUUID()}`,
          log: log.child({ component: 'leader-election' }),
          ...(le.leaseDurationMs ? { leaseDurationMs: le.leaseDurationMs } : {}),
          ...(le.renewDeadlineMs ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
          ...(le.retryPeriodMs ? { retryPeriodMs: le.retryPeriodMs } : {}),
        });
        this.metrics.leaderStatus.set({ name: leaseName }, 0);
        const elector = this.#elector;
        electing = detachedFromTrace(() =>
          elector.run(AbortSignal.any([electorStop.signal, fatal.signal]), {
            onStartedLeading: (leading) => {
              this.metrics.leaderStatus.set({ name: leaseName }, 1);
              for (const r of leaderRunnables) launch(r, AbortSignal.any([stopAll, leading, runStop.signal]), running);
            },
            onStoppedLeading: () => {
              this.metrics.leaderStatus.set({ name: leaseName }, 0);
              fail(
                new ManagerError(
                  'LeaderElectionLost',
                  `leader election lost: the Lease ${namespace}/${leaseName} could not be renewed in time; stopping at once`,
                ),
              );
            },
            onNewLeader: (id) => log.info({ leader: id || '(none)' }, 'leader changed'),
          }),
        );
      } else {
        for (const r of leaderRunnables) launch(r, AbortSignal.any([stopAll, runStop.signal]), running);
      }
      await new Promise<void>((resolve) => stopAll.addEventListener('abort', () => resolve(), { once: true }));
      if (!fatalError) {
        log.info({ timeoutMs: this.#drainMs }, 'stopping: draining in-flight work');
        // bounded: reconciles get the drain time, then their signal (and requests) abort; one that still does not
        // return (it awaits something else) is left behind after a margin, so the Lease is released in time
        const drained = await within(Promise.all(running), this.#drainMs + DRAIN_MARGIN_MS);
        if (!drained)
          log.warn(
            { timeoutMs: this.#drainMs + DRAIN_MARGIN_MS },
            'stopping without waiting longer: work still running past the drain time',
          );
      }
      ended = true;
    } finally {
      if (fatalError) {
        // everything at once, the servers included; their signal has aborted: give what they were doing a moment to
        // end (and its spans to close), no more
        runStop.abort(fatalError);
        serveStop.abort();
        await within(Promise.all([...running, ...serving]), DRAIN_MARGIN_MS);
      }
      runStop.abort();
      electorStop.abort();
      await step('releasing the Lease', () => electing);
      // the rest of a graceful stop shares what is left of its budget: the drain time twice and the margin
      const deadline = Number.isFinite(stopBegan) ? stopBegan + 2 * this.#drainMs + DRAIN_MARGIN_MS : performance.now();
      const left = () => (fatalError ? 0 : Math.max(0, deadline - performance.now()));
      // Events under way get the drain time after a graceful stop, none after a fatal error (a lost Lease: stop
      // acting); meanwhile the webhook server keeps accepting calls until the drain time has passed since the stop
      // began, so that the Service has dropped this replica from its endpoints before the listener closes
      // (no stop began — the start itself failed — nothing was routed here to wait for)
      const lameDuck =
        fatalError || serving.length === 0 || !Number.isFinite(stopBegan)
          ? 0
          : Math.max(0, stopBegan + this.#drainMs - performance.now());
      await step('flushing Events', () =>
        Promise.all([
          ...[...this.#recorders.values()].map((r) => r.flush(Math.min(this.#drainMs, left()))),
          lameDuck > 0 ? sleep(lameDuck, fatal.signal) : undefined,
        ]),
      );
      log.info({}, 'stopping: the caches');
      cacheStop.abort();
      if (serving.length > 0) {
        log.info({}, 'stopping: the webhook server');
        serveStop.abort();
        // calls under way are answered, until the deadline; then start() settles and the rest is cut at exit
        if (!(await within(Promise.all(serving), left())))
          log.warn({}, 'stopping without waiting longer: webhook calls still under way');
      }
      serveStop.abort();
      if (this.#servers.length > 0) {
        log.info({}, 'stopping: the HTTP servers');
        await step('closing the HTTP servers', () => Promise.all(this.#servers.map((s) => s.stop())));
      }
      await step('releasing the metrics certificate', () => this.#releaseMetrics());
      await this.#runStoppedHooks();
      if (problems.length > 0 && (fatalError || !ended))
        log.warn({ failed: problems.length }, 'stopping after an error: steps of the stop failed too');
      else if (problems.length > 0) {
        // biome-ignore lint/correctness/noUnsafeFinally: a failed step of a stop is the outcome of that stop
        throw new ManagerError('StopFailed', `stopping failed: ${problems.map(describe).join('; ')}`, {
          cause: problems.length === 1 ? problems[0] : new AggregateError(problems, 'stopping failed'),
        });
      }
    }
    if (fatalError) throw fatalError;
    log.info({}, 'stopped');
  }

  /**
   * The main of an operator process: `start()` with SIGTERM/SIGINT handling. Exits 0 after a graceful stop, 1 with a
   * one-line reason on stderr after a fatal error; a second signal exits at once.
   */
  async run(): Promise<never> {
    const ctl = new AbortController();
    const onSignal = (sig: NodeJS.Signals) => {
      if (ctl.signal.aborted) {
        this.log.warn({ signal: sig }, 'second signal: exiting now');
        process.exit(1);
      }
      this.log.info({ signal: sig }, 'shutdown requested');
      ctl.abort();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    try {
      await this.start(ctl.signal);
      process.exit(0);
    } catch (err) {
      process.stderr.write(`${this.name}: ${oneLine(err)}\n`);
      process.exit(1);
    }
  }

  async #startServers(): Promise<void> {
    const metricsOptions = this.#o.metrics ?? {};
    const healthAt = this.#o.health?.bindAddress ?? ':8081';
    const metricsEndpoint = {
      path: '/metrics',
      handle: async () => ({
        status: 200,
        contentType: this.metrics.registry.contentType,
        body: this.metrics.text(),
      }),
    };
    if (metricsOptions.bindAddress !== '0') {
      try {
        const m = await metricsServer(metricsOptions, metricsEndpoint, { client: this.client, log: this.log });
        this.#metricsServer = m.server;
        this.#releaseMetrics = m.release;
      } catch (err) {
        if (err instanceof MetricsAuthError && err.code === 'CertificateUnreadable') {
          throw new ManagerError('CertificateUnreadable', err.message, { cause: err });
        }
        throw new ManagerError('BindFailed', `cannot serve /metrics: ${describe(err)}`, { cause: err });
      }
    }
    if (healthAt !== '0') this.#healthServer = new HttpEndpoints(healthAt, [this.#healthz, this.#readyz]);
    for (const s of [this.#metricsServer, this.#healthServer]) {
      if (!s) continue;
      try {
        await s.start();
        this.#servers.push(s);
      } catch (err) {
        await Promise.all(this.#servers.map((x) => x.stop()));
        this.#releaseMetrics(); // the certificate watcher of a server that never listened
        throw new ManagerError('BindFailed', `cannot listen: ${describe(err)}`, { cause: err });
      }
    }
    const scheme = this.#metricsServer?.secure ? 'https (authenticated)' : 'http';
    this.log.info(
      {
        metrics: this.metricsAddress ? `${scheme} ${this.metricsAddress}` : 'off',
        health: this.healthAddress ?? 'off',
      },
      'serving',
    );
  }

  /** Every watched resource must be served by the apiserver (a missing CRD is a clear, fatal error). */
  async #checkServed(signal: AbortSignal): Promise<void> {
    const resources = new Map<string, ResourceType>();
    for (const c of this.#controllers) for (const r of c.resources()) resources.set(resourceId(r), r);
    const deadline = Date.now() + (this.#o.controllers?.apiReachableTimeoutMs ?? 30_000);
    for (const r of resources.values()) {
      for (let attempt = 1; ; attempt++) {
        if (signal.aborted) return;
        try {
          const served = await this.client.serverResources(r.apiVersion, { signal });
          if (served.some((x) => x.name === r.plural)) break;
          throw new ManagerError('ResourceNotServed', notServed(r));
        } catch (err) {
          if (err instanceof ManagerError) throw err;
          if (isApiError(err, 'NotFound')) throw new ManagerError('ResourceNotServed', notServed(r));
          if (isApiError(err, 'Aborted')) return;
          if (Date.now() > deadline) {
            throw new ManagerError(
              'ApiUnreachable',
              `cannot reach the apiserver at ${this.client.transport.server.origin}: ${(err as Error).message}`,
              { cause: err },
            );
          }
          const delay = Math.min(5_000, 250 * 2 ** attempt);
          this.log.warn({ err: (err as Error).message, retryInMs: delay }, 'cannot reach the apiserver yet');
          await sleep(delay, signal);
        }
      }
    }
  }
}

function notServed(r: ResourceType): string {
  const id = resourceId(r);
  return r.group === '' || r.group.endsWith('.k8s.io') || !r.group.includes('.')
    ? `the apiserver does not serve ${id} (${r.apiVersion})`
    : `the apiserver does not serve ${id} (${r.apiVersion}): install its CustomResourceDefinition first (e.g. kubectl apply -f config/crd)`;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function oneLine(err: unknown): string {
  const text = describe(err);
  return text.split('\n')[0] ?? text;
}

/** This replica's name: `$POD_NAME` (the Deployment sets it from the downward API), else the hostname. */
function instanceName(): string {
  return process.env.POD_NAME || hostname();
}
