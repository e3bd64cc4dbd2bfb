/**
 * @module sharding/sharded
 * A manager's sharding: the coordinator (coordinator.ts) decides which shards this replica holds; this module runs
 * them. Taking a shard caches its objects (one list and watch per partitioned kind: the controllers' primary and
 * owned kinds, by their `opkit.dev/shard` label, or a primary kind by the apiserver's shard selector on the uid
 * under the `server` filter, scheme.ts, decided as it starts), then admits its requests (gate.ts) and enqueues its
 * objects. Handing one off stops admitting, drains the reconciles under way (for the drain time, then aborts them),
 * and drops its objects from the cache. The labellers (labeller.ts) give each primary object without a valid label
 * its shard, from the hash of its shard key (ring.ts; `labels` filter only), and each child without one its owner's;
 * children written through `ctx.create` / `ctx.apply` carry their owner's label from the start. Objects that change
 * shard are moves.ts's.
 *
 * Guarantees:
 * - A shard's requests are admitted only once every partitioned kind has listed it, and only while the member Lease
 *   is fresh by the monotonic clock at that moment (gate.ts); every request of an admitted reconcile, and every label
 *   write, asks the same right before it is sent. So a replica resumed after a pause past its Lease sends nothing for
 *   a shard: its first check stops every shard.
 * - A hand-off returns only when none of its reconciles runs any more (their requests aborted past the drain time); a
 *   stale member Lease aborts every reconcile at once.
 * - One object, one replica, and an owner with its children in one shard (moves.ts): an object that leaves a shard
 *   held here is aborted as the cache sees it and its children follow it; one that arrives after the shard's list,
 *   not by this replica's labelling, is held back for the drain time plus the abort margin; a child that loses its
 *   label gets its owner's back while the owner waits.
 * - A shard whose caches do not list within `syncTimeoutMs` is given up (uncached, logged, counted in
 *   `opkit_shard_sync_timeouts_total`): the coordinator frees its fence and takes it again in a later round.
 * - At start, before joining, children of the primary kinds with no shard label (written before the operator was
 *   sharded) get their owner's; before a shard starts, its owners' children labelled for the other filter get this
 *   one's (children.ts). So no replica misses a child and makes it again.
 */

import { randomBytes } from 'node:crypto';
import type { Cache } from '../cache/cache.ts';
import { Leases } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { type Kind, type KubeObject, refOf, resourceId } from '../client/resource.ts';
import type { Controller } from '../controller/controller.ts';
import { UsageError } from '../errors.ts';
import type { EventRecorder } from '../helpers/events.ts';
import { within } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import { LOW_PRIORITY } from '../workqueue/index.ts';
import { adoptChildren, labelExistingChildren, shardOfOwnerRef } from './children.ts';
import { ShardCoordinator, type ShardHost } from './coordinator.ts';
import { ShardGate } from './gate.ts';
import { Labeller } from './labeller.ts';
import { ShardMoves } from './moves.ts';
import { shardOf } from './ring.ts';
import { SchemeChoice, type ShardScheme } from './scheme.ts';

/** How long past the abort a hand-off waits for reconciles to return (their requests have aborted). */
const ABORT_MARGIN_MS = 1_000;
/** How long a shard's start labels children of the other filter, at most, before it starts anyway. */
const ADOPT_MS = 10_000;
/** How long a shard's caches may take to list before the shard is given up (controller-runtime's cache sync). */
const SYNC_TIMEOUT_MS = 120_000;

/** Sharding: every replica active, each on a share of the objects (see docs/sharding.md). */
export interface ShardingSettings {
  /**
   * Shard the controllers over the replicas (default false: leader election decides, or every replica runs all). The
   * settings are checked when the manager is made: a bad `key` or timings throw a `UsageError` (`InvalidArgument`).
   */
  readonly enabled?: boolean;
  /** Namespace of the member and fence Leases (default: $POD_NAMESPACE, else the client's namespace). */
  readonly namespace?: string;
  /** The ring's name, the Leases' prefix (default: the manager's name). */
  readonly name?: string;
  /** This replica's identity (default: the instance name + 5 random characters). */
  readonly identity?: string;
  /**
   * What decides an object's shard: `name` (default: `namespace/name`, so objects spread evenly) or `namespace`
   * (a namespace's objects stay together, for operators that read across objects of a namespace).
   */
  readonly key?: 'name' | 'namespace';
  /**
   * How a replica's caches select a shard (docs/sharding.md): `labels` (every apiserver: each primary object is
   * labelled with its shard), `server` (the apiserver's shard selectors on the uid, KEP-5866: no label on primary
   * objects; the start fails where the apiserver does not serve them), or `auto` (default: `server` where the
   * apiserver serves them and `key` is `name`, else `labels`). Replicas of a ring with different filters never act at
   * once: while any uses `labels`, only those work.
   */
  readonly filter?: 'auto' | 'labels' | 'server';
  /** How long others wait, after a member's Lease last changed, before taking its shards (default 15 s). */
  readonly leaseDurationMs?: number;
  /** How long a replica keeps working without renewing its Lease before it stops every shard (default 10 s). */
  readonly renewDeadlineMs?: number;
  /** How often Leases are renewed and shards re-checked (default 2 s). */
  readonly retryPeriodMs?: number;
}

/** What a manager's sharding is made with. */
export interface ShardingParts {
  readonly settings: ShardingSettings;
  /** The manager's name: the ring's, unless the settings name one. */
  readonly managerName: string;
  /** The Leases' namespace unless the settings or $POD_NAMESPACE name one (the client's). */
  readonly defaultNamespace: string;
  /** This replica's instance name (`$POD_NAME` or the hostname), the start of its identity. */
  readonly instance: string;
  readonly client: Client;
  readonly cache: Cache;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly events: EventRecorder;
  /** The drain time of a hand-off (the manager's `gracefulShutdownTimeoutMs`). */
  readonly drainMs: number;
  /** The sharded controllers (read when shards change hands). */
  readonly controllers: () => readonly Controller[];
  /** How long a shard's caches may take to list before it is given up (default 2 min). */
  readonly syncTimeoutMs?: number;
}

/** A replica's identity: `base` (a pod name) as a DNS label, and 5 random characters. */
export function shardIdentity(base: string): string {
  const clean =
    base
      .toLowerCase()
      .replace(/[^a-z0-9-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 50) || 'replica';
  return `${clean}-${randomBytes(4).toString('hex').slice(0, 5)}`;
}

/** Runs the shards this replica holds; a `Runnable` on every replica (see the module comment). */
export class Sharding implements ShardHost {
  readonly gate: ShardGate;
  readonly needLeaderElection = false;
  readonly coordinator: ShardCoordinator;
  readonly #p: ShardingParts;
  readonly #log: Logger;
  readonly #ring: string;
  readonly #namespace: string;
  readonly #identity: string;
  readonly #labellers: Labeller[] = [];
  /** The labellers of the owned kinds (a subset of `#labellers`). */
  readonly #children: Labeller[] = [];
  readonly #metrics: ReturnType<typeof shardSeries>;
  /** The filter: decided when sharding starts (`labels` until then). */
  readonly #choice = new SchemeChoice();

  constructor(parts: ShardingParts) {
    this.#p = parts;
    this.gate = new ShardGate({
      ...{ holds: () => this.coordinator.holds(), holdMs: parts.drainMs + ABORT_MARGIN_MS },
      ...{ scheme: () => this.#choice.scheme, partitioning: (role, kind) => this.#choice.partitioning(role, kind) },
    });
    this.#log = parts.log.child({ component: 'sharding' });
    this.#metrics = shardSeries(parts.metrics);
    const s = parts.settings;
    if (s.key !== undefined && s.key !== 'name' && s.key !== 'namespace')
      throw new UsageError('InvalidArgument', `sharding.key: "${String(s.key)}" is not name or namespace`);
    if (s.filter !== undefined && !['auto', 'labels', 'server'].includes(s.filter))
      throw new UsageError('InvalidArgument', `sharding.filter: "${String(s.filter)}" is not auto, labels or server`);
    if (s.filter === 'server' && s.key === 'namespace')
      throw new UsageError(
        'InvalidArgument',
        "sharding.filter: server shards by uid, not by namespace (the apiserver's hash of similar namespace names puts them in one shard): use key name, or filter labels",
      );
    this.#ring = s.name ?? parts.managerName;
    this.#namespace = s.namespace ?? process.env.POD_NAMESPACE ?? parts.defaultNamespace;
    this.#identity = s.identity ?? shardIdentity(parts.instance);
    this.coordinator = new ShardCoordinator({
      ...this.#ringOptions(this.#ring, this, this.#log),
      observer: this.#observer(),
      filter: () => this.#scheme().filter,
    });
  }

  /**
   * Another ring of this replica's (`<ring>-<suffix>`: a fleet's member clusters, multicluster/spread.ts), whose
   * shards `host` runs: the same identity, namespace, client and Lease timings as the objects' ring.
   */
  ring(suffix: string, host: ShardHost): ShardCoordinator {
    const ring = `${this.#ring}-${suffix}`;
    return new ShardCoordinator(this.#ringOptions(ring, host, this.#p.log.child({ component: 'sharding', ring })));
  }

  #ringOptions(ring: string, host: ShardHost, log: Logger) {
    const s = this.#p.settings;
    return {
      ...{ client: this.#p.client, namespace: this.#namespace, ring, identity: this.#identity, host, log },
      ...(s.leaseDurationMs !== undefined ? { leaseDurationMs: s.leaseDurationMs } : {}),
      ...(s.renewDeadlineMs !== undefined ? { renewDeadlineMs: s.renewDeadlineMs } : {}),
      ...(s.retryPeriodMs !== undefined ? { retryPeriodMs: s.retryPeriodMs } : {}),
    };
  }

  /** Labels what needs it, then runs the coordinator until `signal` aborts (it releases every shard then). */
  async start(signal: AbortSignal): Promise<void> {
    const { filter = 'auto', key = 'name' } = this.#p.settings;
    const decided = { client: this.#p.client, namespace: this.#namespace, log: this.#log, signal };
    this.#log.info(
      { filter: (await this.#choice.decide(filter, key, decided)).filter },
      'sharding: caches select shards by',
    );
    const primaries = this.#primaryKinds();
    const { client, cache } = this.#p;
    const owned = this.#ownedInformers(primaries).map((i) => i.resource);
    const keyOf = (namespace: string | undefined, name: string) => this.#keyOf(namespace, name);
    const parts = { client, cache, scheme: this.#scheme(), gate: this.gate, log: this.#log, keyOf };
    await labelExistingChildren({ ...parts, primaries, owned }, signal);
    const labeller = (kind: Kind, of: (obj: KubeObject) => number | undefined, primary = false) => {
      // a primary object's first label comes after its children's (of the other filter): its first reconcile has them
      const before = (obj: KubeObject, b: number, until: AbortSignal) =>
        adoptChildren({ controller: obj.metadata.uid ?? '' }, b, this.#adoption(b), until);
      const l = new Labeller({
        ...{ client: this.#p.client, kind, namespaces: this.#p.cache.namespacesOf(kind), log: this.#log },
        ...{ scheme: this.#scheme(), ...(primary ? { before } : {}) },
        ...{ shardOf: of, runs: (b: number) => this.gate.isActive(b), guard: (b: number) => this.gate.check(b) },
      });
      l.start(signal);
      this.#labellers.push(l);
      return l;
    };
    const newObjects = new Map<string, Labeller>();
    if (this.#scheme().primariesMove)
      for (const kind of primaries)
        newObjects.set(
          resourceId(kind),
          labeller(kind, (obj) => shardOf(this.#keyOf(obj.metadata.namespace, obj.metadata.name ?? '')), true),
        );
    const moves = new ShardMoves({
      ...{ gate: this.gate, cache: this.#p.cache, client: this.#p.client, log: this.#log, primaries, owned },
      labelled: (kind, key) => newObjects.get(resourceId(kind))?.labelled(key) ?? false,
    });
    moves.follow();
    // under server a child's shard is its owner's uid's, which its reference names: known before the owner is cached
    const ownerShard = (child: KubeObject) =>
      this.#scheme().primariesMove ? this.gate.shardOf(moves.ownerOf(child)) : shardOfOwnerRef(child, primaries);
    for (const kind of owned) this.#children.push(labeller(kind, ownerShard));
    await this.coordinator.run(signal);
  }

  /** See `ShardHost.acquire`. */
  async acquire(shard: number, signal: AbortSignal): Promise<boolean> {
    const value = String(shard);
    const timeoutMs = this.#p.syncTimeoutMs ?? SYNC_TIMEOUT_MS;
    const timedOut = AbortSignal.timeout(timeoutMs);
    const until = AbortSignal.any([signal, timedOut]);
    const listed = await Promise.all(this.#p.cache.partitioned().map((i) => i.addPartition(value, until)));
    if (signal.aborted) return false;
    if (!listed.every(Boolean)) {
      this.#metrics.syncTimeouts.inc({});
      this.#log.error(
        { shard, timeoutMs },
        'sharding: the caches did not list the shard in time: giving it up (taken again in a later round)',
      );
      await Promise.all(this.#p.cache.partitioned().map((i) => i.removePartition(value)));
      return false;
    }
    await adoptChildren({ shard }, shard, this.#adoption(), AbortSignal.any([until, AbortSignal.timeout(ADOPT_MS)]));
    if (signal.aborted || !this.coordinator.holds()) {
      // stopped while adopting (a stale Lease, a stop): the shard never starts here
      await Promise.all(this.#p.cache.partitioned().map((i) => i.removePartition(value)));
      return false;
    }
    this.gate.activate(shard);
    for (const c of this.#p.controllers()) {
      const [primary] = c.resources();
      if (!primary) continue;
      for (const obj of this.#p.cache.informer(primary).store.values())
        if (this.gate.shardOf(obj) === shard) c.enqueue(refOf(obj), LOW_PRIORITY);
    }
    for (const l of this.#labellers) l.rescan();
    return true;
  }

  /** What adopting children needs; `shard` active here: its writes ask the gate, else (its start) the Lease. */
  #adoption(shard?: number) {
    const guard = () => {
      if (shard !== undefined) this.gate.check(shard);
      else if (!this.coordinator.holds()) throw new DOMException('sharding: the member Lease is stale', 'AbortError');
    };
    return { labellers: this.#children, cache: this.#p.cache, guard };
  }

  /** See `ShardHost.release`. */
  async release(shard: number, now = false): Promise<void> {
    this.gate.deactivate(shard);
    if (now) this.gate.abort(shard, new DOMException('the fence names another holder', 'AbortError'));
    if (!(await within(this.gate.drained(shard), now ? 0 : this.#p.drainMs))) {
      this.#log.warn(
        { shard, inFlight: this.gate.inFlight(shard) },
        'sharding: hand-off: aborting reconciles past the drain time',
      );
      this.gate.abort(shard, new DOMException('the shard is handed off', 'AbortError'));
      await within(this.gate.drained(shard), ABORT_MARGIN_MS);
    }
    await Promise.all(this.#p.cache.partitioned().map((i) => i.removePartition(String(shard))));
  }

  /** See `ShardHost.lose`. */
  lose(): void {
    this.gate.abortAll(new DOMException('the member Lease went stale', 'AbortError'));
    for (const i of this.#p.cache.partitioned()) for (const v of i.partitions) void i.removePartition(v);
  }

  /** The scheme in force (scheme.ts). */
  #scheme(): ShardScheme {
    return this.#choice.scheme;
  }

  #primaryKinds(): Kind[] {
    const seen = new Map<string, Kind>();
    for (const c of this.#p.controllers()) {
      const [primary] = c.resources();
      if (primary) seen.set(resourceId(primary), primary);
    }
    return [...seen.values()];
  }

  /** The shard key of a primary object, by its namespace and name. */
  #keyOf(namespace: string | undefined, name: string): string {
    if (this.#p.settings.key === 'namespace') return namespace ?? name;
    return namespace ? `${namespace}/${name}` : name;
  }

  /** The informers of the owned kinds: partitioned, and not of a primary kind. */
  #ownedInformers(primaries: readonly Kind[]) {
    return this.#p.cache.partitioned().filter((i) => !primaries.some((p) => resourceId(p) === resourceId(i.resource)));
  }

  #observer() {
    const m = this.#metrics;
    const { events } = this.#p;
    const [namespace, ring] = [this.#namespace, this.#ring];
    const fence = (b: number) => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { namespace, name: `${ring}-shard-${b}` },
    });
    const me = this.#identity;
    return {
      round: (held: number, members: number) => {
        m.shards.set({}, held);
        m.members.set({}, members);
      },
      handoff: (b: number, direction: 'acquired' | 'released' | 'lost', _f: unknown, from?: string) => {
        m.handoffs.inc({ direction });
        const [type, reason, note] =
          direction === 'acquired'
            ? (['Normal', 'ShardAcquired', `${me} took shard ${b}${from ? ` from ${from}` : ''}`] as const)
            : direction === 'released'
              ? (['Normal', 'ShardReleased', `${me} handed shard ${b} off, its reconciles drained`] as const)
              : (['Warning', 'ShardLost', `${me} stopped shard ${b}: its member Lease went stale`] as const);
        events.event(Leases, fence(b), type, reason, note);
      },
      rebalanced: (seconds: number) => m.rebalance.observe({}, seconds),
    };
  }
}

function shardSeries(metrics: Metrics) {
  const r = metrics.registry;
  return {
    shards: r.gauge({ name: 'opkit_shards_held', help: 'Shards this replica holds', labelNames: [] }),
    members: r.gauge({
      name: 'opkit_shard_members',
      help: 'Live members of the ring this replica sees',
      labelNames: [],
    }),
    handoffs: r.counter({
      name: 'opkit_shard_handoffs_total',
      help: 'Shards this replica acquired, released (drained) or lost (its member Lease went stale)',
      labelNames: ['direction'],
    }),
    syncTimeouts: r.counter({
      name: 'opkit_shard_sync_timeouts_total',
      help: 'Shards given up because their caches did not list in time (taken again in a later round)',
      labelNames: [],
    }),
    rebalance: r.histogram({
      name: 'opkit_shard_rebalance_seconds',
      help: 'Time from seeing that this replica holds other shards than it owns to holding exactly those',
      labelNames: [],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120],
    }),
  };
}
