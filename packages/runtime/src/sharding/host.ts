/**
 * @module sharding/host
 * What the shard coordinator (coordinator.ts) works with: the Lease calls it makes, the host that runs the shards it
 * holds (the manager's caches and controllers, sharded.ts), and what it reports (metrics, Events).
 */
import type { Lease } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';

/** What the coordinator needs of a client: Leases only. */
export type ShardLeaseClient = Pick<Client, 'get' | 'create' | 'update' | 'list' | 'delete'>;

/** What runs the shards: the manager's side (caches, controllers) of a hand-off. */
export interface ShardHost {
  /**
   * The shard is ours: cache it, then reconcile it. Resolves true once reconciling; false when `signal` aborted first,
   * or the shard could not be cached in time (the host has given it up: uncached, logged, counted).
   */
  acquire(shard: number, signal: AbortSignal): Promise<boolean>;
  /**
   * Stop reconciling the shard: no new work, in-flight reconciles drained (for the drain time; at once when `now`:
   * their signals abort), its objects uncached.
   */
  release(shard: number, now?: boolean): Promise<void>;
  /** Stop every shard at once: the member Lease went stale. In-flight reconciles abort now. */
  lose(): void;
}

/** What the coordinator reports (metrics, Events). */
export interface ShardObserver {
  /** Shards held and live members seen, after each round. */
  round?(held: number, members: number): void;
  /** A shard was acquired, released (drained) or lost (the member Lease went stale). */
  handoff?(shard: number, direction: 'acquired' | 'released' | 'lost', fence: Lease | undefined, from?: string): void;
  /** This replica holds exactly the shards it owns again, `seconds` after it first saw that it did not. */
  rebalanced?(seconds: number): void;
}
