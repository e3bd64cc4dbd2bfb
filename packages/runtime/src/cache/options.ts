/**
 * @module cache/options
 * What a `Cache` takes: cache-wide options, per-resource settings, and what a cached list narrows by (and, from
 * partitioning.ts, how a partitioned informer splits).
 */
import type { Client } from '../client/client.ts';
import type { SelectorInput } from '../client/labels.ts';
import type { KubeObject } from '../client/resource.ts';
import type { BackoffOptions } from '../internal/backoff.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import type { IndexQuery } from './indexes.ts';
import type { StalenessOptions } from './staleness.ts';

export type { Partitioning } from './partitioning.ts';

/**
 * One resource's cache settings (`CacheOptions.byResource`), in place of the cache-wide ones; fixed when its informer
 * is first used.
 */
export interface ResourceCacheOptions {
  /** Watch only this namespace for this resource (instead of the cache's namespaces). */
  readonly namespace?: string;
  /** Watch these namespaces (one watch each) for this resource. */
  readonly namespaces?: readonly string[];
  /** Store only the objects this label selector matches (e.g. `app=web`): the cache never sees the others. */
  readonly labelSelector?: string;
  /** Store only the objects this field selector matches (e.g. `spec.nodeName=node-1`). */
  readonly fieldSelector?: string;
  /**
   * Applied to each object before it is stored (not to the resource's metadata-only form); `Cache.transform` sets a
   * typed one.
   */
  readonly transform?: (obj: KubeObject) => KubeObject;
}

/** Options of a `Cache`; only `client` is required. */
export interface CacheOptions {
  /** The client the informers list and watch with. */
  readonly client: Client;
  /** Where informers log (as component `cache`); silent by default. */
  readonly log?: Logger;
  /** Watch health per informer is reported here when set. */
  readonly metrics?: Metrics;
  /** Watch only this namespace (for every namespaced resource). */
  readonly namespace?: string;
  /** Watch only these namespaces (for every namespaced resource): one watch each, merged in one store per resource. */
  readonly namespaces?: readonly string[];
  /** Drop `metadata.managedFields` before storing (default true). */
  readonly dropManagedFields?: boolean;
  /** Per-resource settings, by resource id (`pods`, `deployments.apps`, `appservices.app.example.com`). */
  readonly byResource?: Readonly<Record<string, ResourceCacheOptions>>;
  /** Deep-freeze stored objects, so code that changes a cached object throws (for tests; default false). */
  readonly freeze?: boolean;
  /** Longest tolerated silence on a watch before it is restarted (default: its server-side timeout + 15 s). */
  readonly inactivityTimeoutMs?: number;
  /** Range of the server-side watch timeout in seconds, picked at random per watch (default [30, 45)). */
  readonly watchTimeoutSeconds?: readonly [number, number];
  /** Pacing of list and watch retries after errors (default 800 ms doubling to 30 s, jitter 0.5). */
  readonly backoff?: BackoffOptions;
  /** Items per page of a paginated list (default 500). */
  readonly pageSize?: number;
  /** `stream` (default): streaming lists (WatchList), paginated where the server refuses; `paged`: pages only. */
  readonly listMode?: 'stream' | 'paged';
  /**
   * Stale-cache detection (cache/staleness.ts): every `intervalMs` (default 30 s, at least 100 ms) each watch's cache
   * is compared with the apiserver's resourceVersion; one behind for `afterMs` (default 90 s, at least 1 s) is
   * relisted in pages, and reported as stale (and, with `readiness`, fails the manager's `cache-fresh` check) only if
   * the relist changed it; a relist that changed nothing makes the bound grow. `false` turns it off.
   */
  readonly staleness?: StalenessOptions | false;
}

/** What `Cache.list` narrows its answer by; every given option must hold. */
export interface CacheListOptions<T extends KubeObject = KubeObject> {
  /** Only objects of this namespace (it must be one the cache watches); undefined: every namespace. */
  readonly namespace?: string | undefined;
  /** Only objects whose labels this selector matches: a string (`app=web,tier!=db`), a `LabelSelector` or a record. */
  readonly labelSelector?: SelectorInput;
  /**
   * Objects an index finds: a handle's query (`byInstance.is('web')`, see `defineIndex`), or a built-in index by name
   * (`namespace`, `owner`, `controller` — each holding UIDs or names) as `{ name, value }`.
   */
  readonly index?: IndexQuery<T> | { readonly name: 'namespace' | 'owner' | 'controller'; readonly value: string };
}
