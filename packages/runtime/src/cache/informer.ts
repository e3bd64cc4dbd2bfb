/**
 * @module cache/informer
 * A reflector, its store and the event handlers that listen to it, for one resource (and optionally one namespace —
 * or a list of namespaces, one reflector and one watch each, merged into the one store — and selectors). Handlers
 * added at any time first receive an `add` for every object already stored, then every change; a handler that throws
 * is logged and never breaks the informer or other handlers. An `add` says whether it came with the initial list (or
 * that replay), so a consumer can give it a lower priority than a change.
 *
 * Guarantees: `hasSynced` / `waitForSync()` are true only after the initial list of every namespace is fully stored.
 * With several namespaces each reflector relists and replaces only its own namespace's objects, so a relist in one
 * never disturbs the others. Stored objects are shared and read-only (see store.ts). The default indexes are
 * `namespace`, `owner` (owner UIDs) and `controller` (the controlling owner's UID).
 */
import type { Client } from '../client/client.ts';
import type { ApiError } from '../client/errors.ts';
import { Selector } from '../client/labels.ts';
import { type Kind, type KubeObject, resourceId } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Partitioning } from './partitioning.ts';
import { Reflector, type ReflectorOptions } from './reflector.ts';
import { type IndexFunc, indexers, Store } from './store.ts';

/**
 * Callbacks for an informer's changes; each is optional. They run synchronously as the store changes, so they should
 * only enqueue work.
 */
export interface EventHandler<T> {
  /** `initial`: the object came with the initial list (or the replay to a handler added later), not a change. */
  add?(obj: T, initial: boolean): void;
  /** An object changed: `old` is the state stored before, `obj` the new one. */
  update?(old: T, obj: T): void;
  /** An object is gone: its last stored state. */
  delete?(obj: T): void;
}

/** The reflector's options (but the client and resource, given separately), and whether to freeze stored objects. */
export interface InformerOptions<T extends KubeObject> extends Omit<ReflectorOptions<T>, 'client' | 'resource'> {
  /** Deep-freeze stored objects so that a mutation throws (for tests). */
  readonly freeze?: boolean | undefined;
  /** Watch these namespaces (one watch each) instead of `namespace`; at least one. */
  readonly namespaces?: readonly string[] | undefined;
  /**
   * Cache by partition: only the objects of the partitions added (`addPartition`), each listed and watched apart with
   * its own selectors; none until one is added.
   */
  readonly partitioning?: Partitioning | undefined;
}

/** One partition of a partitioned informer: its reflectors (one per namespace) and what stops them. */
interface Partition<T extends KubeObject> {
  readonly reflectors: Reflector<T>[];
  readonly stop: AbortController;
  running: Promise<void> | undefined;
}

/**
 * The list-and-watch loop of one resource, its store, and the handlers that hear about its changes (see the module
 * comment). Usually created and shared by a `Cache`.
 *
 * @showModuleComment
 */
export class Informer<T extends KubeObject> {
  /** The resource listed and watched. */
  readonly resource: Kind<T>;
  /** The objects as last listed and watched, with the default indexes `namespace`, `owner` and `controller`. */
  readonly store: Store<T>;
  #reflectors: Reflector<T>[];
  /** Partitions by value (a partitioned informer's reflectors). */
  readonly #partitions = new Map<string, Partition<T>>();
  readonly #newReflector: (namespace: string | undefined, partition?: string) => Reflector<T>;
  readonly #client: Client;
  readonly #selectors: { readonly labelSelector?: string; readonly fieldSelector?: string };
  #parsedSelector: Selector | undefined;
  #partitioning: Partitioning | undefined;
  #signal: AbortSignal | undefined;
  /** The namespaces watched, when the informer watches some but not all. */
  readonly namespaces: readonly string[] | undefined;
  readonly #handlers = new Set<EventHandler<T>>();
  readonly #log: Logger;
  #running: Promise<void> | undefined;

  /**
   * Whether an object like `obj` can be in this informer's store: its namespace is one the informer watches and its
   * labels match the informer's label selector (a field selector is not judged: then true).
   */
  mayHold(obj: KubeObject): boolean {
    const ns = obj.metadata.namespace;
    if (this.namespaces && ns !== undefined && !this.namespaces.includes(ns)) return false;
    const selector = this.#selectors.labelSelector;
    if (selector === undefined) return true;
    this.#parsedSelector ??= Selector.from(selector); // parsed once, on the first question
    return this.#parsedSelector.matches(obj.metadata.labels);
  }

  constructor(client: Client, resource: Kind<T>, options: InformerOptions<T>) {
    this.resource = resource;
    this.#client = client;
    this.#selectors = {
      ...(options.labelSelector ? { labelSelector: options.labelSelector } : {}),
      ...(options.fieldSelector ? { fieldSelector: options.fieldSelector } : {}),
    };
    const namespaces = options.namespaces
      ? [...new Set(options.namespaces)]
      : options.namespace
        ? [options.namespace]
        : undefined;
    if (namespaces?.length === 0) {
      throw new UsageError('InvalidArgument', `${resourceId(resource)}: namespaces must not be empty`);
    }
    this.namespaces = namespaces;
    this.#log = options.log.child({
      resource: resourceId(resource),
      ...(namespaces ? { namespace: namespaces.join(',') } : {}),
    });
    this.store = new Store<T>({ freeze: options.freeze ?? false });
    this.store.addIndexer('namespace', indexers.namespace);
    this.store.addIndexer('owner', indexers.owner);
    this.store.addIndexer('controller', indexers.controller);
    this.store.listener = {
      add: (obj) => {
        const initial = !this.hasSynced;
        this.#emit((h) => h.add?.(obj, initial));
      },
      update: (old, obj) => this.#emit((h) => h.update?.(old, obj)),
      delete: (obj) => this.#emit((h) => h.delete?.(obj)),
    };
    this.#partitioning = options.partitioning;
    this.#newReflector = (namespace, value) => {
      const by = value === undefined ? undefined : this.#partitioning;
      if (!by || value === undefined)
        return new Reflector<T>({ ...options, namespace, client, resource, log: this.#log }, this.store);
      const selected = by.selectors(value);
      const labelSelector = [options.labelSelector, selected.labelSelector].filter(Boolean).join(',') || undefined;
      const partition = { has: (obj: KubeObject) => by.has(obj, value) };
      const log = this.#log.child({ partition: value });
      const scoped = { labelSelector, shardSelector: selected.shardSelector, partition, log };
      return new Reflector<T>({ ...options, ...scoped, namespace, client, resource }, this.store);
    };
    const one = (namespace: string | undefined) => this.#newReflector(namespace);
    this.#reflectors = options.partitioning ? [] : namespaces ? namespaces.map(one) : [one(undefined)];
  }

  /**
   * Whether the initial list of every watched namespace is fully stored. A partitioned informer counts as synced
   * whatever its partitions do (each has its own sync: `addPartition` resolves on it), so a partition being added
   * never makes readiness fail.
   */
  get hasSynced(): boolean {
    return this.#reflectors.every((r) => r.synced);
  }

  /** Before it has synced: why the last list or watch of a namespace not yet synced failed (e.g. Forbidden). */
  get syncError(): ApiError | undefined {
    return this.#reflectors.find((r) => !r.synced && r.syncError)?.syncError;
  }

  /** A watch the apiserver refused (Forbidden) since its last watch that opened, though its list may have passed. */
  get watchRefusal(): ApiError | undefined {
    return this.#reflectors.find((r) => r.watchRefusal)?.watchRefusal;
  }

  /**
   * Whether a watch of it was found stale (cache/staleness.ts: a relist changed it) and has not been brought past that
   * relist since.
   */
  get stale(): boolean {
    const partitions = [...this.#partitions.values()].flatMap((p) => p.reflectors);
    return [...this.#reflectors, ...partitions].some((r) => r.stale);
  }

  /** How a partitioned informer caches, or undefined. */
  get partitioning(): Partitioning | undefined {
    return this.#partitioning;
  }

  /**
   * Makes an informer that has not started cache by partition (as the option `partitioning`): it drops its
   * whole-resource list and watch. A `UsageError` (`InvalidArgument`) once started, or partitioned another way.
   */
  partitionBy(by: Partitioning): void {
    if (this.#partitioning === by) return;
    if (this.running || this.#partitioning !== undefined)
      throw new UsageError('InvalidArgument', `${resourceId(this.resource)}: partition it before it starts, one way`);
    this.#partitioning = by;
    this.#reflectors = [];
  }

  /** The partitions cached (their values). */
  get partitions(): string[] {
    return [...this.#partitions.keys()];
  }

  /**
   * Caches the objects of partition `value` (one list and watch per namespace): resolves true once
   * they are stored, false if `signal` or the informer's own stop aborts first. Adding a partition already cached
   * only waits for it.
   */
  async addPartition(value: string, signal?: AbortSignal): Promise<boolean> {
    if (!this.#partitioning) throw new UsageError('InvalidArgument', `${resourceId(this.resource)} is not partitioned`);
    let p = this.#partitions.get(value);
    if (!p) {
      const reflectors = (this.namespaces ?? [undefined]).map((ns) => this.#newReflector(ns, value));
      p = { reflectors, stop: new AbortController(), running: undefined };
      this.#partitions.set(value, p);
      if (this.#signal) this.#runPartition(p, this.#signal);
    }
    const part = p;
    const stops = AbortSignal.any([part.stop.signal, ...(signal ? [signal] : [])]);
    if (stops.aborted) return false;
    return new Promise((resolve) => {
      let pending = part.reflectors.length;
      const onAbort = () => resolve(false);
      stops.addEventListener('abort', onAbort, { once: true });
      for (const r of part.reflectors)
        r.whenSynced(() => {
          if (--pending > 0) return;
          stops.removeEventListener('abort', onAbort);
          resolve(true);
        });
    });
  }

  /**
   * Stops caching the partition `value`: its watches end, then its objects leave the store without delete events
   * (they were not deleted). Resolves once done.
   */
  async removePartition(value: string): Promise<void> {
    const p = this.#partitions.get(value);
    if (!p) return;
    this.#partitions.delete(value);
    p.stop.abort();
    await p.running;
    const by = this.#partitioning;
    // a partition added again meanwhile keeps its objects
    if (by && !this.#partitions.has(value)) this.store.forget((o) => by.has(o, value));
  }

  #runPartition(p: Partition<T>, signal: AbortSignal): void {
    const stop = AbortSignal.any([signal, p.stop.signal]);
    p.running = Promise.all(p.reflectors.map((r) => r.run(stop))).then(() => {});
  }

  /**
   * What the apiserver holds now of the objects this informer caches: a live list (with its selectors; its partitions
   * only) of `namespace`, or of every namespace it watches when none is given. An empty list for a namespace it does not
   * watch. For finding what the cache has not seen yet, never instead of the cache.
   */
  async listLive(namespace: string | undefined, signal?: AbortSignal): Promise<T[]> {
    const all = this.namespaces ?? [undefined];
    const scope =
      namespace === undefined ? all : this.namespaces && !this.namespaces.includes(namespace) ? [] : [namespace];
    const by = this.#partitioning;
    const items: T[] = [];
    for (const ns of scope) {
      const list = await this.#client.list(this.resource, {
        ...this.#selectors,
        ...(ns ? { namespace: ns } : {}),
        ...(signal ? { signal } : {}),
      });
      items.push(...list.items);
    }
    const values = [...this.#partitions.keys()];
    return by ? items.filter((o) => values.some((v) => by.has(o, v))) : items;
  }

  /** Whether `start` was called. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /**
   * The resourceVersion the informer has seen up to; undefined with several namespaces (each watch has its own, and
   * resourceVersions are opaque: they cannot be merged).
   */
  get resourceVersion(): string | undefined {
    return this.#reflectors.length === 1 ? this.#reflectors[0]?.resourceVersion : undefined;
  }

  /** Registers a handler; it gets an `add` for each stored object first. Returns a function that removes it. */
  addEventHandler(handler: EventHandler<T>): () => void {
    this.#handlers.add(handler);
    for (const obj of this.store.values()) this.#call(() => handler.add?.(obj, true));
    return () => this.#handlers.delete(handler);
  }

  /** Adds an index to the store unless one of that name exists (then this is a no-op). */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (!this.store.hasIndex(name)) this.store.addIndexer(name, fn);
  }

  /** Starts the list/watch loop (once); it runs until `signal` aborts. */
  start(signal: AbortSignal): void {
    if (this.#running) return;
    this.#signal = signal;
    for (const p of this.#partitions.values()) this.#runPartition(p, signal);
    this.#running = Promise.all(this.#reflectors.map((r) => r.run(signal))).then(() => {});
  }

  /** Resolves true once synced, false if `signal` aborts first. */
  waitForSync(signal?: AbortSignal): Promise<boolean> {
    if (this.hasSynced) return Promise.resolve(true);
    if (signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = () => resolve(false);
      signal?.addEventListener('abort', onAbort, { once: true });
      let pending = this.#reflectors.length;
      for (const r of this.#reflectors)
        r.whenSynced(() => {
          if (--pending > 0) return;
          signal?.removeEventListener('abort', onAbort);
          resolve(true);
        });
    });
  }

  /** Resolves when the loop has stopped (after the start signal aborted). */
  async stopped(): Promise<void> {
    await this.#running;
    await Promise.all([...this.#partitions.values()].map((p) => p.running));
  }

  #emit(fn: (h: EventHandler<T>) => void): void {
    for (const h of this.#handlers) this.#call(() => fn(h));
  }

  #call(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.#log.error({ err: (err as Error).message }, 'an event handler threw');
    }
  }
}
