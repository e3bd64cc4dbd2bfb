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
 * Lifetimes: an informer made by a controller's watch, an index or a read (`informer`, `get`, `list`) is kept for the
 * life of the process. One made by `hold` — a watch added while the process runs (`ctx.watchKinds`) — is kept only
 * while held: when its last hold is released, and nothing but holds used it, its watches stop and it and its objects
 * are dropped (a later use starts it again, with the typed indexes registered for it). A read or an index of a held
 * informer does not keep it; `informer(r)` does. Readiness (`synced`, `unsynced`, `waitForSync`) waits only for the
 * informers kept for good: a kind a custom resource names must not take the pod out of service.
 *
 * Guarantees: reads wait until that resource's informer has synced, so a read never sees a partial cache. A read
 * naming a namespace the cache does not watch throws `CacheError` `NamespaceNotCached` rather than answering "not
 * found" for an object it cannot see. By default `metadata.managedFields` is dropped before storing (often half of an
 * object's size; an operator rarely needs it). Objects returned are shared and read-only: `structuredClone` one
 * before changing it. Informers run outside any trace, also one started by a read inside a reconcile: their lists
 * and watches never nest under a reconcile's span.
 * Caveat: a resource's informer config (namespaces, selectors) is fixed on first use.
 */
import { Selector } from '../client/labels.ts';
import { type Kind, type KubeObject, type ObjectRef, objectKey, resourceId } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { detachedFromTrace } from '../tracing/spans.ts';
import { type Index, IndexError } from './indexes.ts';
import { Informer } from './informer.ts';
import type { CacheListOptions, CacheOptions, Partitioning } from './options.ts';
import type { IndexFunc } from './store.ts';
import { dropManagedFields, markingPartial, type Transform, thenDropManagedFields } from './transform.ts';

export type { CacheListOptions, CacheOptions, ResourceCacheOptions } from './options.ts';

/** Why the cache cannot answer a read, or take its options. */
export type CacheErrorCode =
  /**
   * A controller's informers, or a kind a reconcile named (`ctx.watchKinds`), did not sync within its
   * `cacheSyncTimeoutMs`: check its RBAC and the apiserver.
   */
  | 'CacheSyncTimeout'
  /** A read names a namespace the cache does not watch: add it to the cache's namespaces, or read with the client. */
  | 'NamespaceNotCached'
  /** The cache's options contradict each other, or a transform was set after the informer's first use. */
  | 'InvalidOptions'
  /**
   * The cache stopped before the informer of the read synced: the read has no answer (the process is stopping); the
   * reconcile waiting for a kind it named (`ctx.watchKinds`) was aborted; or the kind was unwatched before it synced.
   */
  | 'CacheStopped'
  /**
   * The apiserver refused to list or watch a kind a reconcile named (`ctx.watchKinds`): Forbidden (grant list and
   * watch on it), NotFound (it is not served) or MethodNotAllowed (it cannot be listed).
   */
  | 'WatchRefused';

/**
 * A hold on a resource's informer (`Cache.hold`): the informer runs at least until `release`, which resolves once it
 * has stopped if that was its last use.
 */
export interface CacheHold<T extends KubeObject> {
  /** The resource's shared informer (started with the cache). */
  readonly informer: Informer<T>;
  /** Releases this hold (a second call does nothing). */
  release(): Promise<void>;
}

/** A read the cache cannot answer, or cache options that contradict each other. */
export class CacheError extends OpkitError<CacheErrorCode> {
  override readonly name = 'CacheError';
}

export { dropManagedFields };

/**
 * Internal: the informer of `r` as the cache keeps it, without keeping a held one for good (what reads use; for the
 * expectations of a reconcile's writes).
 */
export let informerOf: <T extends KubeObject>(cache: Cache, r: Kind<T>) => Informer<T>;

/**
 * The shared informer cache of a process: one informer per resource, created on first use and shared by every
 * controller; reads are served from memory once that informer has synced. See the module comment for namespaces and
 * guarantees.
 *
 * @showModuleComment
 */
export class Cache {
  static {
    informerOf = (cache, r) => cache.#use(r);
  }

  readonly #options: CacheOptions;
  readonly #informers = new Map<string, Informer<KubeObject>>();
  /** Informers made by `hold` and not used otherwise since: how many holds each has. Absent: kept for good. */
  readonly #holds = new Map<string, number>();
  /** Each informer's own stop, besides the cache's. */
  readonly #stops = new Map<string, AbortController>();
  /** Typed indexes registered so far, by resource id and name. */
  readonly #indexes = new Map<string, IndexFunc<KubeObject>>();
  readonly #transforms = new Map<string, Transform>();
  /** Resources cached by partition (`partition`), by informer key: how they are partitioned. */
  readonly #partitioned = new Map<string, Partitioning>();
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
    const st = options.staleness;
    for (const k of ['intervalMs', 'afterMs'] as const)
      if (st && st[k] !== undefined && !(Number.isFinite(st[k]) && (st[k] ?? 0) > 0))
        throw new CacheError(
          'InvalidOptions',
          `staleness.${k} must be a positive number of milliseconds, got ${st[k]}`,
        );
    this.#options = options;
    this.#log = (options.log ?? silentLogger).child({ component: 'cache' });
    options.metrics?.cacheObjects(() => this.#informers.entries());
  }

  /** Whether `start` was called. */
  get started(): boolean {
    return this.#signal !== undefined;
  }

  /**
   * The shared informer of a resource (created on first use; started if the cache is started), kept for the life of the
   * process, also one a hold made.
   */
  informer<T extends KubeObject>(r: Kind<T>): Informer<T> {
    this.#holds.delete(informerKey(r));
    return this.#use(r);
  }

  /**
   * Holds the informer of `r` (created and started if needed) until `release`: an informer that only holds keep is
   * stopped, and its objects dropped, when the last is released. An informer kept for good stays so. A kind cached by
   * partition (sharding) holds only the partitions added to it.
   */
  hold<T extends KubeObject>(r: Kind<T>): CacheHold<T> {
    const key = informerKey(r);
    const existed = this.#informers.has(key);
    const informer = this.#use(r);
    const counted = !existed || this.#holds.has(key);
    if (counted) this.#holds.set(key, (this.#holds.get(key) ?? 0) + 1);
    let released = !counted;
    return {
      informer,
      release: async () => {
        if (released) return;
        released = true;
        await this.#release(key, informer as unknown as Informer<KubeObject>);
      },
    };
  }

  async #release(key: string, informer: Informer<KubeObject>): Promise<void> {
    const left = (this.#holds.get(key) ?? 0) - 1;
    if (!this.#holds.has(key) || this.#informers.get(key) !== informer) return; // kept for good since
    if (left > 0) {
      this.#holds.set(key, left);
      return;
    }
    this.#holds.delete(key);
    this.#informers.delete(key);
    this.#stops.get(key)?.abort();
    this.#stops.delete(key);
    await informer.stopped();
    informer.store.forget(() => true);
    if (!this.#informers.has(key)) this.#options.metrics?.forgetWatch(key); // not made again meanwhile
    this.#log.info({ resource: key }, 'stopped an informer no watch holds any more');
  }

  /** The informer of `r`, as it is kept (held or for good), or a new one kept for good. */
  #use<T extends KubeObject>(r: Kind<T>): Informer<T> {
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
        partitioning: this.#partitioned.get(key),
        freeze: o.freeze,
        pageSize: o.pageSize,
        listMode: o.listMode,
        inactivityTimeoutMs: o.inactivityTimeoutMs,
        watchTimeoutSeconds: o.watchTimeoutSeconds,
        backoff: o.backoff,
        staleness: o.staleness,
        log: this.#log,
        metrics: o.metrics?.watch(key),
      });
      // the typed indexes registered for it (an informer stopped by its last release and made again)
      for (const [slot, fn] of this.#indexes)
        if (slot.startsWith(`${key}\u0000`)) inf.addIndexer(slot.slice(key.length + 1), fn as IndexFunc<T>);
      this.#informers.set(key, inf as unknown as Informer<KubeObject>);
      this.#stops.set(key, new AbortController());
      if (this.#signal) this.#run(key, inf as unknown as Informer<KubeObject>, this.#signal);
    }
    return inf;
  }

  /**
   * Starts an informer until the cache's signal or its own stop aborts, outside any trace (the first read of a kind may
   * come from inside a reconcile's span).
   */
  #run(key: string, inf: Informer<KubeObject>, signal: AbortSignal): void {
    const own = this.#stops.get(key)?.signal;
    detachedFromTrace(() => inf.start(own ? AbortSignal.any([signal, own]) : signal));
  }

  /**
   * Caches `r` by partition (sharding): only the objects of the partitions added with `informer(r).addPartition(v)`,
   * each listed and watched apart with `by`'s selectors. Before its informer starts (an index added before is kept),
   * one way; else a `CacheError` (`InvalidOptions`).
   */
  partition<T extends KubeObject>(r: Kind<T>, by: Partitioning): void {
    const key = informerKey(r);
    const [existing, current] = [this.#informers.get(key), this.#partitioned.get(key)];
    if (current === by) return;
    if (current || existing?.running)
      throw new CacheError(
        'InvalidOptions',
        `${key}: it is cached ${current ? `by ${current.describe}` : 'whole'} and running already, so it cannot be partitioned by ${by.describe} (build sharded controllers before the cache starts)`,
      );
    existing?.partitionBy(by);
    this.#partitioned.set(key, by);
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
    return [...this.#informers.values()].filter((i) => i.partitioning !== undefined);
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
    this.#use(r).addIndexer(name, fn);
  }

  /** Registers a typed index (see `defineIndex`); reads through its handle also register it on first use. */
  addIndex<T extends KubeObject>(index: Index<T>): void {
    const slot = `${informerKey(index.resource)}\u0000${index.name}`;
    const known = this.#indexes.get(slot);
    if (known === index.fn) return;
    if (known !== undefined || this.#use(index.resource).store.hasIndex(index.name)) {
      throw new IndexError(
        'IndexConflict',
        `${informerKey(index.resource)} already has an index named "${index.name}": give this one another name`,
      );
    }
    this.#indexes.set(slot, index.fn as IndexFunc<KubeObject>);
    this.#use(index.resource).addIndexer(index.name, index.fn);
  }

  /** Starts every informer, now and later ones, until `signal` aborts. */
  start(signal: AbortSignal): void {
    if (this.#signal) return;
    this.#signal = signal;
    for (const [key, inf] of this.#informers) this.#run(key, inf, signal);
    for (const fn of this.#started.splice(0)) fn();
  }

  /**
   * Resolves true when every informer kept for good created so far has synced; false if `signal` aborts first.
   */
  async waitForSync(signal?: AbortSignal): Promise<boolean> {
    const results = await Promise.all(this.#kept().map((i) => i.waitForSync(signal)));
    return results.every(Boolean);
  }

  /** Whether every informer kept for good has synced (for readiness probes). */
  get synced(): boolean {
    return this.unsynced().length === 0;
  }

  /** The informers kept for good found stale (cache/staleness.ts) and not brought forward by their watch since. */
  stale(): Informer<KubeObject>[] {
    return this.#kept().filter((i) => i.stale);
  }

  /** The informers kept for good that have not synced yet (what readiness waits for). */
  unsynced(): Informer<KubeObject>[] {
    return this.#kept().filter((i) => !i.hasSynced);
  }

  #kept(): Informer<KubeObject>[] {
    return [...this.#informers].filter(([key]) => !this.#holds.has(key)).map(([, inf]) => inf);
  }

  /** The informers running or to run (held ones included). */
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
    if (!this.#signal) await new Promise<void>((resolve) => this.#started.push(resolve));
    const signal = this.#signal as AbortSignal;
    const key = informerKey(r);
    for (;;) {
      const inf = this.#use(r);
      if (inf.hasSynced) return inf;
      const own = this.#stops.get(key)?.signal;
      if (await inf.waitForSync(own ? AbortSignal.any([signal, own]) : signal)) return inf;
      if (signal.aborted) throw new CacheError('CacheStopped', `the cache stopped before ${resourceId(r)} synced`);
      // a held informer released before it synced: read from one made in its place by a hold, never make one for good
      if (!this.#informers.has(key))
        throw new CacheError('CacheStopped', `${resourceId(r)} was unwatched before it synced`, {
          cause: inf.syncError,
        });
    }
  }
}

/** The informer of a resource: one per kind, and a separate one for its metadata-only form (`pods (metadata)`). */
function informerKey(r: Kind): string {
  return r.metadataOnly ? `${resourceId(r)} (metadata)` : resourceId(r);
}
