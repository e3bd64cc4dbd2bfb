/**
 * @module manager/manager
 * The Manager owns what an operator process runs: the client, the shared cache, the controllers (and any other
 * runnables), leader election, the metrics server and the health probes.
 *
 * `start(signal)`: serve /metrics, /healthz and /readyz (on every replica) → check that every watched resource is
 * served (a missing CRD fails at once, naming it) → start the cache (standbys keep warm caches) → campaign for the
 * Lease when leader election is on → run the controllers while leading. `/readyz` passes once every informer kept for
 * good has synced (one only a dynamic watch holds does not count) and none is stale (`cache-fresh`).
 *
 * An apiserver that cannot be reached for 30 s at start is fatal too (`ApiUnreachable`). With `sharding` on, the
 * controllers run on every replica, each reconciling and caching the shards it holds (sharding/sharded.ts).
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
 * normal end, any other error one of those failures. Fatal errors — caches that never sync, a lost Lease, a controller
 * that fails — stop everything at once, the servers included (runnables get 1 s to return once their signal has
 * aborted), Event writes too; `start` rejects with a `ManagerError` (or the `CacheError` `CacheSyncTimeout` of a
 * controller whose caches never synced) and `run()` exits 1 with a one-line reason. Either way the `onStopped` hooks
 * run last, just before `start` settles: the place to shut down a tracing provider.
 *
 * This module is the registration (controllers, runnables, checks, hooks); one run's groups and stop phases are
 * manager/lifecycle.ts, the servers manager/endpoints.ts, the runnable groups manager/runnables.ts.
 */

import { randomUUID } from 'node:crypto';
import { Cache } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import { type Kind, type KubeObject, resourceId } from '../client/resource.ts';
import { ControllerBuilder, type ControllerBuilderFor } from '../controller/builder.ts';
import { type Controller, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS } from '../controller/controller.ts';
import type { Predicate } from '../controller/predicates.ts';
import { UsageError } from '../errors.ts';
import type { EventRecorder } from '../helpers/events.ts';
import { createLogger, type Logger } from '../logger.ts';
import { Metrics } from '../metrics.ts';
import { Fleet, type FleetOptions } from '../multicluster/fleet.ts';
import { Sharding } from '../sharding/sharded.ts';
import type { WebhookServer } from '../webhook/server.ts';
import { instanceName, managerClient } from './client.ts';
import { controllerDefaults, fleetDeps, managerWebhookServer } from './defaults.ts';
import { ManagerEndpoints } from './endpoints.ts';
import { ManagerError } from './errors.ts';
import { replicaFence } from './fence.ts';
import { StoppedHooks } from './hooks.ts';
import { electorFor, type LeaderElector } from './leader.ts';
import { Lifecycle } from './lifecycle.ts';
import type { ManagerOptions } from './options.ts';
import { Recorders } from './recorders.ts';
import type { Runnable } from './runnables.ts';
import { checkServed, DEFAULT_API_REACHABLE_TIMEOUT_MS } from './served.ts';
import { type Check, CheckSet } from './server.ts';

export { ManagerError, type ManagerErrorCode } from './errors.ts';
export type { LeaderElectionSettings, ManagerOptions } from './options.ts';
export type { Runnable } from './runnables.ts';

/** The resources of informers, for a readiness message. */
const ids = (l: readonly { readonly resource: Kind }[]) => l.map((i) => resourceId(i.resource)).join(', ');

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
  readonly #recorders: Recorders;
  readonly #hooks: StoppedHooks;
  readonly #endpoints: ManagerEndpoints;
  #elector: LeaderElector | undefined;
  #started = false;
  /** Set when a stop begins: readiness fails from then on. */
  #stopping = false;
  #webhookServer: WebhookServer | undefined;
  #fleet: Fleet | undefined;
  /** The sharding of the controllers, when on. */
  readonly #sharding: Sharding | undefined;

  /** Prefer `Manager.create`, which also wires the client's request metrics. */
  constructor(options: ManagerOptions & { client: Client; metricsRegistry?: Metrics }) {
    this.#o = options;
    this.name = options.name;
    this.client = options.client;
    this.log = options.log ?? createLogger({ name: options.name });
    this.#recorders = new Recorders(this.client, this.log);
    this.metrics = options.metricsRegistry ?? new Metrics();
    this.cache = new Cache({ ...options.cache, client: this.client, log: this.log, metrics: this.metrics });
    this.#hooks = new StoppedHooks(this.log);
    this.#endpoints = new ManagerEndpoints({
      metrics: options.metrics ?? {},
      healthBindAddress: options.health?.bindAddress ?? ':8081',
      registry: this.metrics,
      checks: [this.#healthz, this.#readyz],
      client: this.client,
      log: this.log,
    });
    this.#healthz.add('ping', () => {});
    this.#readyz.add('shutdown', () => {
      if (this.#stopping) throw new ManagerError('NotReady', 'stopping: the manager is shutting down');
    });
    if (options.sharding?.enabled) {
      this.#sharding = new Sharding({
        ...{ settings: options.sharding, managerName: options.name, instance: instanceName(), drainMs: this.#drainMs },
        ...{ defaultNamespace: this.client.defaultNamespace, client: this.client, cache: this.cache, log: this.log },
        ...{ metrics: this.metrics, events: this.eventRecorder(), controllers: () => this.#controllers },
      });
      this.add(this.#sharding);
    }
    this.#readyz.add('informers', () => {
      if (!this.cache.started) throw new ManagerError('NotReady', 'the cache has not started');
      const pending = this.cache.unsynced();
      if (pending.length > 0) throw new ManagerError('NotReady', `not synced: ${ids(pending)}`);
    });
    const staleness = options.cache?.staleness;
    if (staleness !== false && staleness?.readiness !== false)
      this.#readyz.add('cache-fresh', () => {
        const stale = this.cache.stale();
        if (stale.length > 0) throw new ManagerError('NotReady', `stale (its watch brings nothing): ${ids(stale)}`);
      });
  }

  /** Time in-flight reconciles get on shutdown before their signal aborts. */
  get #drainMs(): number {
    return this.#o.controllers?.gracefulShutdownTimeoutMs ?? DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT_MS;
  }

  /**
   * A manager with a client from `options.client`, or the kubeconfig (as kubectl), or the in-cluster config; a client
   * made here reports `rest_client_requests_total`, names the replica in its user agent
   * (`opkit/<v> (<operator>; <instance>)`, so audit logs tell replicas apart), writes with `fieldValidation` (default
   * `Strict`) and logs each distinct warning of the apiserver once.
   */
  static async create(options: ManagerOptions): Promise<Manager> {
    const metrics = new Metrics();
    const log = options.log ?? createLogger({ name: options.name });
    const client = options.client ?? (await managerClient(options, metrics, log));
    return new Manager({ ...options, log, client, metricsRegistry: metrics });
  }

  /**
   * A controller builder whose controller this manager runs (on the leader); with a kind, for that kind (as
   * `.for(kind, ...predicates)`). Its Events (`ctx.events`) come from this manager's recorder.
   */
  controller(): ControllerBuilder;
  controller<T extends KubeObject>(
    kind: Kind<T, unknown>,
    ...predicates: NoInfer<Predicate<T>>[]
  ): ControllerBuilderFor<T>;
  controller<T extends KubeObject>(
    kind?: Kind<T, unknown>,
    ...predicates: NoInfer<Predicate<T>>[]
  ): ControllerBuilder | ControllerBuilderFor<T> {
    const builder = new ControllerBuilder({
      client: this.client,
      cache: this.cache,
      log: this.log,
      metrics: this.metrics,
      ...this.#defaults(this.#recorders),
      register: (c) => {
        this.#controllers.push(c);
        this.add(c);
      },
    });
    return kind ? builder.for(kind, ...predicates) : builder;
  }

  /** Controller defaults whose Events `recorders` write; `own`: a spread member's fence, not the replica's and gate. */
  #defaults(recorders: Recorders, own?: () => void) {
    // the controllers' writes and Events first ask this replica's fence (fence.ts)
    const leaderElection = this.#o.leaderElection?.enabled === true;
    const fence =
      own ?? replicaFence({ sharding: this.#sharding?.coordinator, leaderElection, elector: () => this.#elector });
    const gate = own ? undefined : this.#sharding?.gate;
    return controllerDefaults({
      ...{ name: this.name, settings: this.#o.controllers, drainMs: this.#drainMs, fence, gate },
      events: { fenced: (f) => recorders.fenced(this.name, f), plain: () => recorders.get(this.name) },
    });
  }

  /**
   * Member clusters, each with the controllers `setup(member)` builds for it (multicluster/fleet.ts): the clusters the
   * `provider` reports are engaged and disengaged while the manager runs, on the leader; with sharding, spread over
   * the replicas (multicluster/spread.ts).
   */
  fleet(options: FleetOptions): Fleet {
    if (this.#fleet) throw new UsageError('InvalidArgument', 'a manager has one fleet: give it one provider');
    const defaults = (c: Client, fence?: () => void) => this.#defaults(new Recorders(c, this.log), fence).defaults;
    const at = { drainMs: this.#drainMs, sharding: this.#sharding };
    const fleet = new Fleet({ ...fleetDeps(this, this.#o, defaults, at), ...options });
    this.#fleet = fleet;
    this.add(fleet);
    this.#readyz.add('fleet', fleet.readiness);
    return fleet;
  }

  /**
   * Adds a runnable that `start()` runs (see `Runnable`); throws a `UsageError` (`AlreadyStarted`) once `start()` was
   * called.
   */
  add(runnable: Runnable): void {
    if (this.#started) throw new UsageError('AlreadyStarted', `manager ${this.name}: add runnables before start()`);
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
    this.#hooks.add(fn, options.timeoutMs);
  }

  /**
   * Adds a liveness check: `/healthz` answers 500 while it throws or rejects (with `[-]<name> failed: <message>`), and
   * `/healthz/<name>` runs it alone. Throws a `UsageError` (`InvalidArgument`) when a check of that name exists
   * (`ping` is built in).
   */
  addHealthzCheck(name: string, check: Check): void {
    this.#healthz.add(name, check);
  }

  /**
   * Adds a readiness check, as `addHealthzCheck` for `/readyz`; built in: `shutdown` (fails once a stop began),
   * `informers` (every informer kept for good synced: not those only dynamic watches hold), `cache-fresh` (none found
   * stale and not brought forward by its watch since; off with `cache.staleness` false or `{ readiness: false }`) and
   * `webhook` (once `webhookServer` is used).
   */
  addReadyzCheck(name: string, check: Check): void {
    this.#readyz.add(name, check);
  }

  /** An EventRecorder with `component` (default: the manager's name) as the Events' source. */
  eventRecorder(component = this.name): EventRecorder {
    return this.#recorders.get(component);
  }

  /** The webhook server, created and added (with a readiness check) on first use. */
  get webhookServer(): WebhookServer {
    if (!this.#webhookServer) {
      this.#webhookServer = managerWebhookServer(this.#o.webhook, this.log, this.metrics.registry);
      this.add(this.#webhookServer);
      this.addReadyzCheck('webhook', this.#webhookServer.ready);
    }
    return this.#webhookServer;
  }

  /** True while this replica holds the Lease; without leader election, true from `start()` on. */
  get isLeader(): boolean {
    return this.#o.leaderElection?.enabled ? (this.#elector?.isLeader ?? false) : this.#started;
  }

  /** With sharding: the shards this replica holds now (else undefined). */
  get shards(): readonly number[] | undefined {
    return this.#sharding?.coordinator.held;
  }

  /** `host:port` the metrics server listens on (after start). */
  get metricsAddress(): string | undefined {
    return this.#endpoints.metricsAddress;
  }

  /** `host:port` the health server (`/healthz`, `/readyz`) listens on (after start; undefined when off). */
  get healthAddress(): string | undefined {
    return this.#endpoints.healthAddress;
  }

  /**
   * Runs until `signal` aborts (then stops in phases, see the module comment, and resolves) or a fatal error (rejects
   * with it). Every step of the stop runs even when an earlier one failed; a step that failed makes a graceful stop
   * reject with `StopFailed` once all have run (its `cause`: the error, or an `AggregateError` of several). Rejects
   * with a `UsageError` (`AlreadyStarted`) when called a second time.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new UsageError('AlreadyStarted', `manager ${this.name}: start() was called already`);
    this.#started = true;
    try {
      await this.#endpoints.start();
    } catch (err) {
      await this.#hooks.run();
      throw err;
    }
    const run = new Lifecycle({
      log: this.log,
      signal,
      gracefulShutdownTimeoutMs: this.#drainMs,
      cache: this.cache,
      runnables: this.#runnables,
      recorders: () => this.#recorders.all(),
      endpoints: this.#endpoints,
      metrics: this.metrics,
      onStopBegins: () => {
        this.#stopping = true;
      },
    });
    /** Whether the run went on to a stop (true: the controllers ran; false: stopped before), unset if it threw. */
    let ran: boolean | undefined;
    try {
      ran = await this.#runUntilStopped(run);
    } finally {
      await run.stop();
      await this.#hooks.run();
      run.throwIfStopFailed(ran !== undefined);
    }
    if (run.fatalError) throw run.fatalError;
    if (ran) this.log.info({}, 'stopped');
  }

  /** Checks the watched resources are served, then runs everything until the stop and drains the controllers. */
  async #runUntilStopped(run: Lifecycle): Promise<boolean> {
    const resources = this.#controllers.flatMap((c) => c.resources());
    const timeoutMs = this.#o.controllers?.apiReachableTimeoutMs ?? DEFAULT_API_REACHABLE_TIMEOUT_MS;
    await checkServed(this.client, resources, { timeoutMs, log: this.log, signal: run.stopping });
    if (run.stopping.aborted) {
      // stopped (or failed) before anything ran: the stop still closes the servers
      if (run.fatalError) throw run.fatalError;
      this.log.info({}, 'stopped before the controllers started');
      return false;
    }
    run.startAll();
    const le = this.#o.leaderElection;
    if (le?.enabled) {
      const { elector, lease } = electorFor(le, {
        ...{ client: this.client, name: this.name, log: this.log },
        identity: `${instanceName()}_${randomUUID()}`,
      });
      this.#elector = elector;
      run.campaign(elector, lease);
    } else {
      run.lead();
    }
    await run.untilStopped();
    return true;
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
}

function oneLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] ?? text;
}
