/**
 * @module multicluster/spread
 * A fleet spread over the replicas of a sharded operator (docs/multicluster.md): each member cluster is in one of
 * `SHARD_COUNT` shards by the hash of its name (`clusterShard`), and those shards are a ring of their own
 * (`<ring>-fleet`: each replica's member Lease, a fence Lease per shard, the owners by rendezvous hashing over the
 * live replicas; sharding/coordinator.ts). A replica engages the members of the shards whose fence it holds, and only
 * those; the fleet's provider runs on every replica, and each keeps its share of what it reports.
 *
 * Guarantees (one member, one replica):
 * - A member is engaged only on a replica that holds the fence of its shard: taken (`acquire`) before the member is
 *   engaged; on a hand-off, freed once the member has stopped or its drain time (plus 1 s) has passed, whichever is
 *   first. A member still stopping past that, or after a lost Lease, may overlap with its next engagement elsewhere,
 *   but writes nothing: its shard is not held here.
 * - Each write of a member's controllers and each of their Events asks, right before it is sent, that this replica's
 *   member Lease is fresh by the monotonic clock at that moment and that it still holds the shard (`fence(name)`): a
 *   replica resumed after a pause past its Lease sends nothing to a member (its first check drops every shard), and
 *   a shard being handed off admits no write from the moment its release starts.
 * - The window that remains is sharding's own: a write that passed the check and then took longer than
 *   leaseDuration − renewDeadline to reach the member's apiserver (see sharding/coordinator.ts).
 */

import { within } from '../internal/sleep.ts';
import type { ShardCoordinator, ShardHost } from '../sharding/coordinator.ts';
import { shardOf } from '../sharding/ring.ts';

/** The suffix of a fleet's ring: its Leases are `<ring>-fleet-member-<identity>` and `<ring>-fleet-shard-<n>`. */
export const FLEET_RING = 'fleet';

/** The shard of the fleet's ring a member cluster is in, by its name (0 … `SHARD_COUNT − 1`). */
export function clusterShard(name: string): number {
  return shardOf(name);
}

/** What the spread asks of its fleet. */
export interface SpreadFleet {
  /** How long a hand-off waits for its members to stop (their drain), before the fence is freed anyway. */
  readonly drainMs: number;
  /**
   * Engages the reported clusters this replica owns now and disengages the others; resolves once those it
   * disengaged have stopped.
   */
  reconcile(): Promise<void>;
}

/** The fleet's share of the members on this replica: the shards it holds (see the module comment). */
export class FleetSpread implements ShardHost {
  readonly #held = new Set<number>();
  readonly #coordinator: ShardCoordinator;
  readonly #fleet: SpreadFleet;

  /** `ring` makes the ring's coordinator for this host (the manager's `Sharding.ring`). */
  constructor(ring: (host: ShardHost) => ShardCoordinator, fleet: SpreadFleet) {
    this.#coordinator = ring(this);
    this.#fleet = fleet;
  }

  /** Whether this replica runs the member cluster `name` now. */
  owns(name: string): boolean {
    return this.#held.has(clusterShard(name));
  }

  /** The shards of the ring held here. */
  get held(): readonly number[] {
    return [...this.#held].sort((a, b) => a - b);
  }

  /** The fence of member `name`'s writes: throws an `AbortError` unless this replica may write to it now. */
  fence(name: string): () => void {
    const shard = clusterShard(name);
    return () => {
      this.#coordinator.check();
      if (!this.#held.has(shard))
        throw new DOMException(`fleet: the shard of cluster ${name} is not held here`, 'AbortError');
    };
  }

  /** Joins the ring and takes and hands off shards until `signal` aborts (every shard is released then). */
  run(signal: AbortSignal): Promise<void> {
    return this.#coordinator.run(signal);
  }

  /** The shard is ours: its members are engaged (each in its own time; one that fails is retried by the fleet). */
  async acquire(shard: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    this.#held.add(shard);
    void this.#fleet.reconcile();
    return true;
  }

  /**
   * Hands the shard off: no write from now on; resolves once its members have stopped, or after the drain time (their
   * writes are refused already), or at once when `now`.
   */
  async release(shard: number, now?: boolean): Promise<void> {
    this.#held.delete(shard);
    const stopped = this.#fleet.reconcile();
    if (!now) await within(stopped, this.#fleet.drainMs + 1_000);
  }

  /** The member Lease went stale: every shard stops at once (their writes are refused already). */
  lose(): void {
    this.#held.clear();
    void this.#fleet.reconcile();
  }
}
