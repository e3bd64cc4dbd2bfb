/**
 * @module manager/options
 * What a `Manager` is configured with (`ManagerOptions`, read from flags by manager/settings.ts) and the defaults it
 * fills in. Every field but `name` is optional; a default named here is the one the manager uses.
 */

import type { CacheOptions } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import type { FieldValidation } from '../client/types.ts';
import type { Logger } from '../logger.ts';
import type { ShardingSettings } from '../sharding/sharded.ts';
import type { WebhookServerOptions } from '../webhook/server.ts';
import type { MetricsServingOptions } from './metricsserving.ts';

/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's (manager/leader.ts): only the replica holding
 * the Lease runs the controllers. The timings must satisfy leaseDuration > renewDeadline > 1.2 × retryPeriod, else
 * `start()` rejects with a `UsageError` (`InvalidArgument`).
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
  /**
   * Whether the client `Manager.create` makes reads built-in kinds in the protobuf encoding (default `true`; see
   * `ClientOptions.protobuf`). `false` reads everything as JSON. A client given in `client` keeps its own setting.
   */
  readonly protobuf?: boolean;
  /**
   * What the apiserver does with a field a write sends that the kind's schema lacks (see `FieldValidation`), for the
   * client `Manager.create` makes (default `Strict`: a typo or a field of another version fails the write, naming the
   * field, instead of being dropped; `--field-validation`). Its warnings are logged once per distinct text. A client
   * given in `client` keeps its own settings.
   */
  readonly fieldValidation?: FieldValidation;
  /** Where the manager and its parts log (default: JSON lines at `info` on stderr, with `name`). */
  readonly log?: Logger;
  /** Leader election (default off). */
  readonly leaderElection?: LeaderElectionSettings;
  /**
   * Sharding (default off): every replica runs the controllers, each reconciling and caching only the shards of
   * objects it holds (see sharding/sharded.ts and docs/sharding.md). Runnables that need leader election still run on
   * the leader only.
   */
  readonly sharding?: ShardingSettings;
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
    /**
     * How long one reconcile may run before its signal aborts (default: no limit), as controller-runtime's
     * `ReconciliationTimeout`; counted in `controller_runtime_reconcile_timeouts_total`, and an error the abort caused
     * is retried as a `ReconcileTimeoutError`.
     */
    readonly reconcileTimeoutMs?: number;
    /** Link reconcile spans to the W3C trace context in objects' `opkit.dev/traceparent` annotation (default off). */
    readonly traceContextFromAnnotations?: boolean;
  };
  /** The webhook server (started on every replica once `webhookServer` is used): `:9443`, certificates from `certDir`
   * (default `/tmp/k8s-webhook-server/serving-certs`, as kubebuilder) unless `certificates` is given. */
  readonly webhook?: Partial<WebhookServerOptions> & { readonly certDir?: string };
}
