/**
 * @module multicluster/fleet
 * A fleet: the member clusters a provider reports, each engaged with the controllers `setup(member)` builds for it
 * (`mgr.fleet({ provider, setup })`). A fleet is one of its manager's runnables: it runs on the leader, and its member
 * controllers' writes and Events ask the manager's fence (leader election) as the hub's do. With sharding it runs on
 * every replica, each engaging the members of the shards of the fleet's ring it holds, its members' writes fenced by
 * those shards (multicluster/spread.ts), and the members read the hub through a cache of the fleet's own.
 *
 * Each report of the provider is the whole set: a cluster that appears is engaged (multicluster/member.ts), one that
 * disappears is disengaged, one whose kubeconfig changed is disengaged and engaged anew. Members are engaged and
 * disengaged concurrently: none waits on another. A provider that fails is run again after a backoff, its clusters
 * kept meanwhile.
 *
 * Guarantees: one member per cluster name at a time (a re-engagement starts once the old one has stopped). A member
 * removed is gone when `fleet.status()` no longer lists it: its reconciles drained, its caches stopped, its client
 * closed, its metrics gone from /metrics. `/readyz` has a `fleet` check that fails, once the fleet runs, until the
 * provider's first report (then members come and go without failing it: one member down must not take the operator
 * out of service); `opkit_fleet_cluster_ready{cluster}` and `fleet.status()` tell each member's state.
 */
import type { Cache } from '../cache/cache.ts';
import type { CacheOptions } from '../cache/options.ts';
import type { Client } from '../client/client.ts';
import type { BuilderOptions } from '../controller/builder.ts';
import { Backoff } from '../internal/backoff.ts';
import { sleep, untilAborted } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import type { Registry } from '../prometheus.ts';
import { FleetError } from './errors.ts';
import { type FleetMember, Member, type MemberOptions, type MemberState } from './member.ts';
import type { ClusterProvider, ClusterReport } from './provider.ts';
import type { FleetSpread, SpreadFleet } from './spread.ts';

/** What `mgr.fleet` takes. */
export interface FleetOptions {
  /** Where the member clusters come from: `kubeconfigFolder`, `kubeconfigSecrets`, `staticClusters`, or your own. */
  readonly provider: ClusterProvider;
  /** Builds the controllers of one member (called for each engagement of each member). */
  readonly setup: (member: FleetMember) => void | Promise<void>;
  /** How long an engagement waits for the member to answer and its caches to sync (default 30 s). */
  readonly syncTimeoutMs?: number;
  /** How often an engaged member is probed (`GET /version`; default 10 s). */
  readonly probeIntervalMs?: number;
  /** How long a probe waits (default 5 s). */
  readonly probeTimeoutMs?: number;
  /** The longest wait before a failed member is tried again (default 60 s). */
  readonly maxBackoffMs?: number;
  /** The members' cache options (default: the manager's). */
  readonly cache?: Omit<CacheOptions, 'client' | 'log' | 'metrics'>;
}

/** One cluster of a fleet, as `fleet.status()` tells it. */
export interface FleetClusterStatus {
  /** Its name. */
  readonly name: string;
  /** `invalid`: the provider cannot read it (`error` says why); else its member's state. */
  readonly state: MemberState | 'invalid';
  /** Why it is not ready. */
  readonly error?: string;
}

/** What the manager gives its fleet. */
export interface FleetDeps {
  /** The hub; `own`: its cache is the fleet's (started and stopped with it), not the manager's. */
  readonly hub: { readonly client: Client; readonly cache: Cache; readonly own?: boolean };
  readonly log: Logger;
  readonly registry: Registry;
  readonly client: MemberOptions['client'];
  readonly cache: MemberOptions['cache'];
  /** A member controller's defaults, for its client; `fence` (spread): what its writes ask instead of the manager's. */
  readonly defaults: (client: Client, fence?: () => void) => BuilderOptions;
  /** With sharding: the fleet's ring (multicluster/spread.ts), over which its members are spread. */
  readonly spread?: (fleet: SpreadFleet) => FleetSpread;
  readonly served: MemberOptions['served'];
  readonly drainMs: number;
}

/** The member clusters of a manager (see the module comment); one of its runnables, on the leader (spread: on all). */
export class Fleet {
  /** A fleet runs on the leader (its members' controllers with it); spread, on every replica. */
  readonly needLeaderElection: boolean;
  readonly #o: FleetOptions & FleetDeps;
  readonly #spread: FleetSpread | undefined;
  /** The provider's last report. */
  #last: ClusterReport | undefined;
  readonly #members = new Map<string, Member>();
  /** A member's stop under way, which its successor waits for. */
  readonly #stopping = new Map<string, Promise<void>>();
  #problems: ReadonlyMap<string, string> = new Map();
  #running = false;
  #reported = false;
  readonly #listeners = new Set<() => void>();

  /** Made by `mgr.fleet(options)`. */
  constructor(options: FleetOptions & FleetDeps) {
    this.#o = options;
    this.#spread = options.spread?.({ reconcile: () => this.#reconcile(), drainMs: options.drainMs });
    this.needLeaderElection = this.#spread === undefined;
    options.registry.gauge<'cluster'>({
      name: 'opkit_fleet_cluster_ready',
      help: 'Whether a member cluster of the fleet is engaged and answers (1), or not (0).',
      labelNames: ['cluster'],
      collect: (g) => {
        g.reset();
        for (const s of this.status()) g.set({ cluster: s.name }, s.state === 'ready' ? 1 : 0);
      },
    });
  }

  /** The provider's description. */
  get description(): string {
    return this.#o.provider.description;
  }

  /** Each cluster the provider reports, engaged or not, by name. */
  status(): FleetClusterStatus[] {
    const out: FleetClusterStatus[] = [];
    for (const [name, m] of this.#members)
      out.push({ name, state: m.state, ...(m.error ? { error: m.error.message } : {}) });
    for (const [name, error] of this.#problems)
      if (!this.#members.has(name)) out.push({ name, state: 'invalid', error });
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The names of the clusters engaged now (in any state but `invalid`). */
  clusters(): string[] {
    return [...this.#members.keys()].sort();
  }

  /** The client of a member that is ready, else undefined (e.g. to write into every member from a hub reconcile). */
  client(name: string): Client | undefined {
    const m = this.#members.get(name);
    return m?.state === 'ready' ? m.client : undefined;
  }

  /**
   * Calls `fn` when a member becomes ready (engaged, or reachable again) and when one is disengaged (e.g. to enqueue
   * the hub objects a fleet copies); returns the off.
   */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** `/readyz`'s `fleet` check (see the module comment). */
  readonly readiness = (): void => {
    if (this.#running && !this.#reported)
      throw new FleetError(
        'NotReported',
        `the fleet's provider (${this.#o.provider.description}) has not reported its clusters yet`,
      );
  };

  /** With sharding: the shards of the fleet's ring this replica holds (else undefined). */
  get shards(): readonly number[] | undefined {
    return this.#spread?.held;
  }

  /**
   * Runs the provider and the members (spread: and the ring) until `signal` aborts, then disengages every member.
   */
  async start(signal: AbortSignal): Promise<void> {
    this.#running = true;
    if (this.#o.hub.own) this.#o.hub.cache.start(signal);
    const ring = this.#spread?.run(signal);
    await this.#provide(signal);
    await ring;
    await Promise.all([...this.#members.keys()].map((name) => this.#disengage(name)));
    await Promise.all(this.#stopping.values());
    if (this.#o.hub.own) await Promise.all(this.#o.hub.cache.informers().map((i) => i.stopped()));
    this.#running = false;
  }

  /** Runs the provider until `signal` aborts, again after a backoff when it fails. */
  async #provide(signal: AbortSignal): Promise<void> {
    const log = this.#o.log;
    const backoff = new Backoff({ initialMs: 1_000, maxMs: this.#o.maxBackoffMs ?? 60_000, jitter: 0 });
    while (!signal.aborted) {
      const report = (r: ClusterReport) => {
        backoff.reset();
        this.#apply(r, signal);
      };
      try {
        // a provider that does not stop when told must not hold the members' disengagement
        const run = this.#o.provider.run({ report, signal, log, hub: this.#o.hub.client });
        await Promise.race([run, untilAborted(signal)]);
      } catch (err) {
        if (signal.aborted) break;
        const delay = backoff.next();
        log.error({ err: (err as Error).message, retryInMs: delay }, 'the fleet provider failed');
        await sleep(delay, signal);
        continue;
      }
      await untilAborted(signal);
    }
  }

  #apply(report: ClusterReport, signal: AbortSignal): void {
    if (signal.aborted) return;
    this.#reported = true;
    for (const [name, problem] of report.problems)
      if (this.#problems.get(name) !== problem) this.#o.log.error({ cluster: name, err: problem }, 'cluster not read');
    this.#problems = report.problems;
    this.#last = report;
    void this.#reconcile();
  }

  /**
   * Engages the reported clusters this replica runs (spread: those of the shards it holds), disengages the others;
   * resolves once those it disengaged have stopped.
   */
  #reconcile(): Promise<void> {
    const report = this.#last;
    const runs = (name: string) => report?.clusters.has(name) === true && (this.#spread?.owns(name) ?? true);
    const stops: Promise<void>[] = [];
    for (const [name, m] of this.#members)
      if (!runs(name) || report?.clusters.get(name)?.fingerprint !== m.fingerprint) stops.push(this.#disengage(name));
    // and those already stopping (gone from the report meanwhile) that this replica does not run any more
    for (const [name, stopping] of this.#stopping) if (!runs(name)) stops.push(stopping);
    if (!this.#running || report === undefined) return Promise.all(stops).then(() => {});
    for (const [name, entry] of report.clusters) {
      if (this.#members.has(name) || !runs(name)) continue;
      const log = this.#o.log.child({ cluster: name });
      const previous = this.#stopping.get(name) ?? Promise.resolve();
      const member = new Member({
        ...this.#o,
        name,
        entry,
        log,
        syncTimeoutMs: this.#o.syncTimeoutMs ?? 30_000,
        probeIntervalMs: this.#o.probeIntervalMs ?? 10_000,
        probeTimeoutMs: this.#o.probeTimeoutMs ?? 5_000,
        maxBackoffMs: this.#o.maxBackoffMs ?? 60_000,
        attach: (registry) => this.#o.registry.attach(registry, { cluster: name }),
        defaults: (client) => this.#o.defaults(client, this.#spread?.fence(name)),
        start: previous,
        onState: (state) => {
          if (state === 'ready') this.#changed();
        },
      });
      this.#members.set(name, member);
      log.info({ provider: this.#o.provider.description }, 'engaging cluster');
    }
    return Promise.all(stops).then(() => {});
  }

  /** Stops the member named `name` (once), and forgets it when it has stopped. */
  #disengage(name: string): Promise<void> {
    const m = this.#members.get(name);
    if (!m) return this.#stopping.get(name) ?? Promise.resolve();
    this.#members.delete(name);
    this.#o.log.info({ cluster: name }, 'disengaging cluster');
    const stopped = m.stop().then(() => {
      if (this.#stopping.get(name) === stopped) this.#stopping.delete(name);
      this.#o.log.info({ cluster: name }, 'cluster disengaged');
      this.#changed();
    });
    this.#stopping.set(name, stopped);
    return stopped;
  }

  #changed(): void {
    for (const fn of this.#listeners) {
      try {
        fn();
      } catch (err) {
        this.#o.log.error({ err: (err as Error).message }, 'a fleet change listener failed');
      }
    }
  }
}
