/**
 * @module cache/cache
 * The shared informer cache: one informer per resource for the whole process, created on first use and shared by
 * every controller, with reads (`get`, `list` by namespace, label selector or index) served from memory. A kind's
 * metadata-only form (`metadataOnly(Pods)`) has an informer of its own beside the full one: it lists and watches
 * `PartialObjectMetadata`, so it holds no spec, status or data.
 *
 * Namespaces: all by default; `namespace` watches one; `namespaces` watches a list of them — one watch per namespace,
 * merged behind the same API (as controller-runtime's `DefaultNamespaces`), which bounds memory for an operator that
 * needs a few namespaces of a big cluster. Cluster-scoped resources are always watched whole.
 *
 * Guarantees: reads wait until that resource's informer has synced, so a read never sees a partial cache. A read
 * naming a namespace the cache does not watch throws `CacheError` `NamespaceNotCached` rather than answering "not
 * found" for an object it cannot see. By default `metadata.managedFields` is dropped before storing (often half of an
 * object's size; an operator rarely needs it). Objects returned are shared and read-only: `structuredClone` one
 * before changing it. Informers run outside any trace, also one started by a read inside a reconcile: their lists
 * and watches never nest under a reconcile's span.
 * Caveat: a resource's informer config (namespaces, selectors) is fixed on first use.
 */
import type { Client } from '../client/client.ts';
import { Selector, type SelectorInput } from '../client/labels.ts';
import { type Kind, type KubeObject, type ObjectRef, objectKey, resourceId } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';
import type { BackoffOptions } from '../internal/backoff.ts';
import { type Logger, silentLogger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import { detachedFromTrace } from '../tracing/spans.ts';
import { type Index, IndexError, type IndexQuery } from './indexes.ts';
import { Informer } from './informer.ts';
import type { IndexFunc } from './store.ts';
import { dropManagedFields, markingPartial, type Transform, thenDropManagedFields } from './transform.ts';

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

/** Why the cache cannot answer a read, or take its options. */
export type CacheErrorCode =
  /** A controller's informers did not sync within its `cacheSyncTimeoutMs`: check its RBAC and the apiserver. */
  | 'CacheSyncTimeout'
  /** A read names a namespace the cache does not watch: add it to the cache's namespaces, or read with the client. */
  | 'NamespaceNotCached'
  /** The cache's options contradict each other, or a transform was set after the informer's first use. */
  | 'InvalidOptions'
  /** The cache stopped before the informer of the read synced: the read has no answer (the process is stopping). */
  | 'CacheStopped';

/** A read the cache cannot answer, or cache options that contradict each other. */
export class CacheError extends OpkitError<CacheErrorCode> {
  override readonly name = 'CacheError';
}

export { dropManagedFields };

/**
 * The shared informer cache of a process: one informer per resource, created on first use and shared by every
 * controller; reads are served from memory once that informer has synced. See the module comment for namespaces and
 * guarantees.
 *
 * @showModuleComment
 */
export class Cache {
  readonly #options: CacheOptions;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  /** Typed indexes registered so far, by resource id and name. */
  readonly #indexes = new Map<string, IndexFunc<KubeObject>>();
  readonly #transforms = new Map<string, Transform>();
  /** Resources cached by partition (`partition`), by informer key: the label they are partitioned by. */
  readonly #partitioned = new Map<string, string>();
  readonly #log: Logger;
  #signal: AbortSignal | undefined;
  #started: (() => void)[] = [];

  constructor(options: CacheOptions) {
    for (const [where, o] of [['cache', options] as const, ...Object.entries(options.byResource ?? {})]) {
      if (o.namespace !== undefined && o.namespaces !== undefined)
        throw new CacheError('InvalidOptions', `${where}: set namespace or namespaces, not both`);
      if (o.namespaces?.length === 0)
        throw new CacheError('InvalidOptions', `${where}: namespaces is empty (leave it out to watch all namespaces)`);
    }
    this.#options = options;
    this.#log = (options.log ?? silentLogger).child({ component: 'cache' });
    options.metrics?.cacheObjects(() => this.#informers.entries());
  }

  /** Whether `start` was called. */
  get started(): boolean {
    return this.#signal !== undefined;
  }

  /** The shared informer of a resource (created on first use; started if the cache is started). */
  informer<T extends KubeObject>(r: Kind<T>): Informer<T> {
    const id = resourceId(r);
    const key = informerKey(r);
    let inf = this.#informers.get(key) as Informer<T> | undefined;
    if (!inf) {
      const o = this.#options;
      const per = o.byResource?.[id];
      const drop = o.dropManagedFields ?? true;
      const custom = (this.#transforms.get(key) ?? (r.metadataOnly ? undefined : per?.transform)) as
        | ((obj: T) => T)
        | undefined;
      const base = drop ? thenDropManagedFields(custom) : custom;
      // what a custom transform made may lack stored fields: its status is merge-patched (helpers/status.ts)
      const transform = custom && base ? markingPartial(base) : base;
      const own = per?.namespace !== undefined || per?.namespaces !== undefined;
      const namespace = r.namespaced ? (own ? per?.namespace : o.namespace) : undefined;
      const namespaces = r.namespaced ? (own ? per?.namespaces : o.namespaces) : undefined;
      inf = new Informer<T>(o.client, r, {
        namespace,
        namespaces,
        labelSelector: per?.labelSelector,
        fieldSelector: per?.fieldSelector,
        transform,
        partitionLabel: this.#partitioned.get(key),
        freeze: o.freeze,
        pageSize: o.pageSize,
        listMode: o.listMode,
        inactivityTimeoutMs: o.inactivityTimeoutMs,
        watchTimeoutSeconds: o.watchTimeoutSeconds,
        backoff: o.backoff,
        log: this.#log,
        metrics: o.metrics?.watch(key),
      });
      this.#informers.set(key, inf as unknown as Informer<KubeObject>);
      // started outside any trace: the first read of a kind may come from inside a reconcile's span
      const [created, signal] = [inf, this.#signal];
      if (signal) detachedFromTrace(() => created.start(signal));
    }
    return inf;
  }

  /**
   * Caches `r` by partition: only the objects whose `label` has a value added with `informer(r).addPartition(value)`,
   * each value listed and watched apart (sharding uses it). Before the resource's informer starts (an index added
   * before is kept), with one label; else a `CacheError` (`InvalidOptions`).
   */
  partition<T extends KubeObject>(r: Kind<T>, label: string): void {
    const key = informerKey(r);
    const existing = this.#informers.get(key);
    if (this.#partitioned.get(key) === label) return;
    if (this.#partitioned.has(key) || existing?.running)
      throw new CacheError(
        'InvalidOptions',
        `${key}: it is cached ${existing?.partitionLabel ? `by the label ${existing.partitionLabel}` : 'whole'} and running already, so it cannot be partitioned by ${label} (build sharded controllers before the cache starts)`,
      );
    existing?.partitionBy(label);
    this.#partitioned.set(key, label);
  }

  /** The namespaces the cache watches `r` in (by its own settings or the cache's); undefined: all of them. */
  namespacesOf(r: Kind): readonly string[] | undefined {
    if (!r.namespaced) return undefined;
    const per = this.#options.byResource?.[resourceId(r)];
    const o = per?.namespace !== undefined || per?.namespaces !== undefined ? per : this.#options;
    return o?.namespaces ?? (o?.namespace !== undefined ? [o.namespace] : undefined);
  }

  /** The informers that cache by partition. */
  partitioned(): Informer<KubeObject>[] {
    return [...this.#informers.values()].filter((i) => i.partitionLabel !== undefined);
  }

  /**
   * Sets the transform applied to each object of `r` before it is stored (managedFields are dropped as well, unless
   * the cache keeps them), e.g. `keepFields('status.phase')`. Before the resource's informer is first used only.
   */
  transform<T extends KubeObject>(r: Kind<T>, fn: Transform<T>): void {
    const key = informerKey(r);
    if (this.#informers.has(key))
      throw new CacheError('InvalidOptions', `${key}: set its transform before the informer is first used`);
    this.#transforms.set(key, fn as unknown as Transform);
  }

  /** Adds an index to a resource's informer (e.g. `label:app` → the label's value). Prefer `addIndex(handle)`. */
  indexField<T extends KubeObject>(r: Kind<T>, name: string, fn: IndexFunc<T>): void {
    this.informer(r).addIndexer(name, fn);
  }

  /** Registers a typed index (see `defineIndex`); reads through its handle also register it on first use. */
  addIndex<T extends KubeObject>(index: Index<T>): void {
    const slot = `${informerKey(index.resource)}\u0000${index.name}`;
    const known = this.#indexes.get(slot);
    if (known === index.fn) return;
    if (known !== undefined || this.informer(index.resource).store.hasIndex(index.name)) {
      throw new IndexError(
        'IndexConflict',
        `${informerKey(index.resource)} already has an index named "${index.name}": give this one another name`,
      );
    }
    this.#indexes.set(slot, index.fn as IndexFunc<KubeObject>);
    this.informer(index.resource).addIndexer(index.name, index.fn);
  }

  /** Starts every informer, now and later ones, until `signal` aborts. */
  start(signal: AbortSignal): void {
    if (this.#signal) return;
    this.#signal = signal;
    detachedFromTrace(() => {
      for (const inf of this.#informers.values()) inf.start(signal);
    });
    for (const fn of this.#started.splice(0)) fn();
  }

  /** Resolves true when every informer created so far has synced; false if `signal` aborts first. */
  async waitForSync(signal?: AbortSignal): Promise<boolean> {
    const results = await Promise.all([...this.#informers.values()].map((i) => i.waitForSync(signal)));
    return results.every(Boolean);
  }

  /** Whether every informer has synced (for readiness probes). */
  get synced(): boolean {
    return [...this.#informers.values()].every((i) => i.hasSynced);
  }

  /** The informers created so far. */
  informers(): readonly Informer<KubeObject>[] {
    return [...this.#informers.values()];
  }

  /** The cached object, or undefined; waits for the informer to sync. */
  async get<T extends KubeObject>(r: Kind<T>, ref: ObjectRef): Promise<T | undefined> {
    const inf = await this.#synced(r);
    this.#watched(inf, ref.namespace);
    return inf.store.get(objectKey(ref));
  }

  /** Cached objects, narrowed by namespace, index and label selector; waits for the informer to sync. */
  async list<T extends KubeObject>(r: Kind<T>, options: CacheListOptions<NoInfer<T>> = {}): Promise<T[]> {
    const query = options.index;
    if (query && 'index' in query) this.addIndex(query.index);
    const inf = await this.#synced(r);
    this.#watched(inf, options.namespace);
    let items: T[];
    if (query) items = inf.store.byIndex('index' in query ? query.index.name : query.name, query.value);
    else if (options.namespace && r.namespaced) items = inf.store.byIndex('namespace', options.namespace);
    else items = inf.store.list();
    if (options.index && options.namespace) items = items.filter((o) => o.metadata.namespace === options.namespace);
    if (options.labelSelector !== undefined) {
      const selector = Selector.from(options.labelSelector);
      items = items.filter((o) => selector.matches(o.metadata.labels));
    }
    return items;
  }

  #watched(
    inf: { readonly resource: Kind; readonly namespaces: readonly string[] | undefined },
    namespace: string | undefined,
  ): void {
    if (namespace === undefined || !inf.resource.namespaced || !inf.namespaces || inf.namespaces.includes(namespace))
      return;
    throw new CacheError(
      'NamespaceNotCached',
      `${resourceId(inf.resource)} in namespace "${namespace}": the cache watches only ${inf.namespaces.map((n) => `"${n}"`).join(', ')} (add it to the cache's namespaces, or read it with the client)`,
    );
  }

  async #synced<T extends KubeObject>(r: Kind<T>): Promise<Informer<T>> {
    const inf = this.informer(r);
    if (inf.hasSynced) return inf;
    if (!this.#signal) await new Promise<void>((resolve) => this.#started.push(resolve));
    if (!(await inf.waitForSync(this.#signal))) {
      throw new CacheError('CacheStopped', `the cache stopped before ${resourceId(r)} synced`);
    }
    return inf;
  }
}

/** The informer of a resource: one per kind, and a separate one for its metadata-only form (`pods (metadata)`). */
function informerKey(r: Kind): string {
  return r.metadataOnly ? `${resourceId(r)} (metadata)` : resourceId(r);
}
