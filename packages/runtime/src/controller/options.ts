/**
 * @module controller/options
 * What a `Controller` is configured with (`ControllerOptions`; the builder fills most from the manager), and the hook
 * a manager's sharding decides each reconcile with (`RequestGate`).
 */

import type { Cache } from '../cache/cache.ts';
import type { Partitioning } from '../cache/partitioning.ts';
import type { Client } from '../client/client.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { EventRecorder } from '../helpers/events.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { Clock, RateLimiter } from '../workqueue/index.ts';
import type { ErrorPolicy } from './policy.ts';

/** How long informers may take to sync (`cacheSyncTimeoutMs`), unless configured. */
export const DEFAULT_CACHE_SYNC_TIMEOUT_MS = 120_000;

/** A controller's options; `name`, `client` and `cache` are required (the builder supplies them). */
export interface ControllerOptions {
  /** The controller's name, unique per manager: in logs, metrics and its queue, and the default Event source. */
  readonly name: string;
  /** The client of each reconcile's `ctx.rawClient` (bound to the reconcile's signal). */
  readonly client: Client;
  /** The cache its watches and `ctx` reads use. */
  readonly cache: Cache;
  /** Where it logs (as `controller: <name>`); silent by default. */
  readonly log?: Logger;
  /** Reconcile and work-queue metrics are reported here when set. */
  readonly metrics?: Metrics;
  /** Workers (default 1). */
  readonly maxConcurrentReconciles?: number;
  /** Paces retries (default `defaultControllerRateLimiter()`: per-request backoff, 5 ms doubling to 1000 s). */
  readonly rateLimiter?: RateLimiter<string>;
  /** The clock of its queue, backoff and expectations (a `FakeClock` in tests; default real time). */
  readonly clock?: Clock;
  /** How long informers may take to sync before `start` fails, and a kind `ctx.watchKinds` names (default 2 min). */
  readonly cacheSyncTimeoutMs?: number;
  /**
   * How long in-flight reconciles may finish after stop, before their `ctx.signal` aborts (default 2 s; the manager's
   * `controllers.gracefulShutdownTimeoutMs`, the `--graceful-shutdown-timeout` flag).
   */
  readonly gracefulShutdownTimeoutMs?: number;
  /**
   * How long one reconcile may run before its `ctx.signal` aborts (default: no limit; the manager's
   * `controllers.reconcileTimeoutMs`, the `--reconcile-timeout` flag); an error the abort caused is retried as a
   * `ReconcileTimeoutError`. See controller/deadline.ts.
   */
  readonly reconcileTimeoutMs?: number;
  /** Expectation timeout (default 60 s). */
  readonly expectationTimeoutMs?: number;
  /** Enqueue every object of the primary kind this often (default: never; the informers are the source of truth). */
  readonly resyncPeriodMs?: number;
  /**
   * Link each reconcile's span to the W3C trace context in the object's `opkit.dev/traceparent` annotation (see
   * tracing.ts; default off).
   */
  readonly traceContextFromAnnotations?: boolean;
  /** Calls of one watch's async mapper in flight at most (default 8; see controller/mapping.ts). */
  readonly mapperConcurrency?: number;
  /** How long one call of an async mapper may take before it is given up, logged and counted (default 30 s). */
  readonly mapperTimeoutMs?: number;
  /** What to do with a failed reconcile (default `defaultErrorPolicy`). */
  readonly errorPolicy?: ErrorPolicy;
  /** Records the Events of `ctx.events` (default: one of the controller's own, source = its name). */
  readonly events?: EventRecorder;
  /** The field manager of `ctx.apply` (default: the controller's name). */
  readonly fieldManager?: string;
  /** The cluster it reconciles in, as `ctx.cluster` (a fleet's member; default `''`, the manager's own). */
  readonly cluster?: string;
  /**
   * Whether a manager runs this controller only on the replica that leads (default true); false: on every replica
   * (as a sharded controller, each reconciling the requests its `gate` admits).
   */
  readonly needLeaderElection?: boolean;
  /** Decides, before each reconcile, whether this replica reconciles the request now (the manager's sharding sets it). */
  readonly gate?: RequestGate;
  /**
   * Whether this replica may act at all now (leader election: the leader Lease fresh by the monotonic clock): asked
   * before each reconcile, which is dropped when it throws, and right before each request a reconcile sends, which it
   * refuses (`Aborted`). The manager sets it; it is checked where work starts, not in a timer that may run late.
   */
  readonly fence?: () => void;
}

/**
 * A request admitted by a `RequestGate`: its reconcile's signal aborts with `signal`; `guard`, when given, is asked
 * right before each request of the reconcile (`ctx.rawClient` and every `ctx` write) is sent, and refuses it by
 * throwing; `end` is called once the reconcile ended.
 */
export interface RequestTicket {
  readonly signal: AbortSignal;
  readonly guard?: () => void;
  /** The labels a child of the admitted object carries (sharding: its shard's), as `ctx.shardLabels`. */
  readonly labels?: Readonly<Record<string, string>>;
  end(): void;
}

/** What a reconcile is admitted with: the guard its requests ask first, and its `ctx.shardLabels`. */
export interface Admission {
  readonly guard: (() => void) | undefined;
  readonly labels: Readonly<Record<string, string>> | undefined;
}

/** A gate's answer: a ticket, `retryAfterMs` (not now: queue it again after that), or undefined (drop it). */
export type GateAnswer = RequestTicket | { readonly retryAfterMs: number } | undefined;

/**
 * Decides, before each reconcile, whether this replica reconciles a request now (sharding: whether its object's
 * shard is active here). A request not admitted is dropped from the queue (not reconciled, not retried); one put off
 * (`retryAfterMs`) is queued again after that.
 */
export interface RequestGate {
  /**
   * Answers a ticket, `retryAfterMs`, or undefined to drop the request. `obj`: the primary object as cached — or,
   * after its delete event, its last state until the request is reconciled — or undefined when the cache never had it.
   */
  admit(key: string, obj: KubeObject | undefined): GateAnswer;
  /**
   * How the caches of the primary and owned kinds are partitioned: each partition is listed and watched apart, on
   * demand (`Cache.partition`), so the replica caches only the partitions it works on.
   */
  partitioning?(role: 'primary' | 'owned', kind: Kind): Partitioning;
}

/** How a kind is watched: the primary kind, a kind it owns, or another. */
export type WatchRole = 'primary' | 'owned' | 'other';
