/**
 * @module cache/store
 * The informer's store: one copy of each object by key (`namespace/name`), with indexes (index name → value →
 * keys) kept current on every change. `replace()` swaps in a full list atomically and reports only real changes:
 * adds for new keys, updates for changed resourceVersions, deletes for keys that disappeared — never a duplicate add
 * for an unchanged object. A replace scoped to one namespace touches only that namespace's objects, so several
 * reflectors (one per namespace) can share one store.
 *
 * Objects are shared, not copied: treat everything read from a store as read-only (`structuredClone` before
 * changing). With `freeze: true` they are deep-frozen, so a mutation throws (tests use this).
 */
import { type KubeObject, keyOf } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { IndexError } from './indexes.ts';

/** Computes the index values of an object (e.g. its owner UIDs). */
export type IndexFunc<T> = (obj: T) => readonly string[];

export interface StoreListener<T> {
  add(obj: T): void;
  update(old: T, obj: T): void;
  delete(obj: T): void;
}

/**
 * One copy of each object of a resource by key (`namespace/name`), with indexes kept current on every change; see the
 * module comment. Objects are shared: treat them as read-only.
 *
 * @showModuleComment
 */
export class Store<T extends KubeObject> {
  readonly #items = new Map<string, T>();
  readonly #indexers = new Map<string, IndexFunc<T>>();
  readonly #indices = new Map<string, Map<string, Set<string>>>();
  readonly #freeze: boolean;
  /** Told of every add, update and delete, after the store changed (the informer's hook). */
  listener: StoreListener<T> | undefined;

  constructor(options: { freeze?: boolean } = {}) {
    this.#freeze = options.freeze ?? false;
  }

  /** How many objects are stored. */
  get size(): number {
    return this.#items.size;
  }

  /** The object stored under `key` (`namespace/name`, or `name` when cluster-scoped), or undefined. */
  get(key: string): T | undefined {
    return this.#items.get(key);
  }

  /** Every stored object, in a new array. */
  list(): T[] {
    return [...this.#items.values()];
  }

  /** The stored keys. */
  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  /** The stored objects, without copying them into an array. */
  values(): IterableIterator<T> {
    return this.#items.values();
  }

  /**
   * Adds an index; existing objects are indexed at once.
   *
   * @throws IndexError (`IndexConflict`) when an index of this name exists already.
   */
  addIndexer(name: string, fn: IndexFunc<T>): void {
    if (this.#indexers.has(name)) {
      throw new IndexError('IndexConflict', `index "${name}" already exists: give this one another name`);
    }
    this.#indexers.set(name, fn);
    const index = new Map<string, Set<string>>();
    this.#indices.set(name, index);
    for (const [key, obj] of this.#items) for (const v of fn(obj)) addTo(index, v, key);
  }

  /** Whether an index of this name exists. */
  hasIndex(name: string): boolean {
    return this.#indexers.has(name);
  }

  /**
   * The objects whose index `name` contains `value`, read synchronously (as a `watches` mapper must); throws a
   * `UsageError` (`InvalidArgument`) when there is no index of that name. The built-in indexes are `namespace`, `owner` (owner UIDs) and `controller` (the
   * controlling owner's UID); `Cache.addIndex(defineIndex(…))` adds typed ones, read by their handle's `name`.
   *
   * @example
   * ```ts
   * import type { Manager } from '@opkit/runtime';
   * import { Pods } from '@opkit/runtime/kinds';
   *
   * declare const mgr: Manager;
   * declare const ownerUid: string;
   * // The pods a ReplicaSet (or any owner) controls, straight from the shared informer's store.
   * const pods = mgr.cache.informer(Pods).store.byIndex('controller', ownerUid);
   * ```
   */
  byIndex(name: string, value: string): T[] {
    const index = this.#indices.get(name);
    if (!index) throw new UsageError('InvalidArgument', `no index named "${name}"`);
    const keys = index.get(value);
    if (!keys) return [];
    const out: T[] = [];
    for (const k of keys) {
      const obj = this.#items.get(k);
      if (obj) out.push(obj);
    }
    return out;
  }

  /** Adds or replaces one object (a watch ADDED / MODIFIED). */
  upsert(obj: T): void {
    const key = keyOf(obj);
    if (this.#freeze) deepFreeze(obj);
    const old = this.#items.get(key);
    this.#items.set(key, obj);
    this.#reindex(key, old, obj);
    if (old) this.listener?.update(old, obj);
    else this.listener?.add(obj);
  }

  /** Removes one object (a watch DELETED); reports the last state the store had, or the given one. */
  remove(obj: T): void {
    const key = keyOf(obj);
    const old = this.#items.get(key);
    if (!old) return;
    this.#items.delete(key);
    this.#reindex(key, old, undefined);
    this.listener?.delete(old);
  }

  /**
   * Replaces the whole content — or, given `namespace`, that namespace's objects only, and given `within` only the
   * objects it `has` (a partition's) — with a fresh list (after a relist); see the module comment. Answers how
   * many objects it added, changed or removed.
   */
  replace(items: readonly T[], namespace?: string, within?: { readonly has: (obj: T) => boolean }): number {
    let changes = 0;
    const fresh = new Map<string, T>();
    for (const obj of items) fresh.set(keyOf(obj), obj);
    const byNamespace = namespace === undefined ? undefined : this.#indices.get('namespace');
    const inNamespace =
      namespace === undefined
        ? [...this.#items]
        : byNamespace
          ? [...(byNamespace.get(namespace) ?? [])].map((k) => [k, this.#items.get(k) as T] as const)
          : [...this.#items].filter(([, o]) => o.metadata.namespace === namespace);
    const current = within ? inNamespace.filter(([, o]) => within.has(o)) : inNamespace;
    for (const [key, old] of current) {
      if (!fresh.has(key)) {
        this.#items.delete(key);
        this.#reindex(key, old, undefined);
        this.listener?.delete(old);
        changes += 1;
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.#items.get(key);
      if (
        old &&
        old.metadata.resourceVersion === obj.metadata.resourceVersion &&
        old.metadata.uid === obj.metadata.uid
      ) {
        continue;
      }
      if (this.#freeze) deepFreeze(obj);
      changes += 1;
      this.#items.set(key, obj);
      this.#reindex(key, old, obj);
      if (old) {
        if (old.metadata.uid !== obj.metadata.uid) {
          this.listener?.delete(old);
          this.listener?.add(obj);
        } else {
          this.listener?.update(old, obj);
        }
      } else {
        this.listener?.add(obj);
      }
    }
    return changes;
  }

  /**
   * Removes the objects `which` selects without telling the listener: they left this store's view (a partition no
   * longer cached), they were not deleted. Answers how many were removed.
   */
  forget(which: (obj: T) => boolean): number {
    let n = 0;
    for (const [key, obj] of [...this.#items]) {
      if (!which(obj)) continue;
      this.#items.delete(key);
      this.#reindex(key, obj, undefined);
      n += 1;
    }
    return n;
  }

  #reindex(key: string, old: T | undefined, obj: T | undefined): void {
    for (const [name, fn] of this.#indexers) {
      const index = this.#indices.get(name);
      if (!index) continue;
      const before = old ? fn(old) : [];
      const after = obj ? fn(obj) : [];
      if (before.length === after.length && before.every((v, i) => v === after[i])) continue;
      for (const v of before) removeFrom(index, v, key);
      for (const v of after) addTo(index, v, key);
    }
  }
}

function addTo(index: Map<string, Set<string>>, value: string, key: string): void {
  let keys = index.get(value);
  if (!keys) {
    keys = new Set();
    index.set(value, keys);
  }
  keys.add(key);
}

function removeFrom(index: Map<string, Set<string>>, value: string, key: string): void {
  const keys = index.get(value);
  if (!keys) return;
  keys.delete(key);
  if (keys.size === 0) index.delete(value);
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value)) deepFreeze(v);
}

/** Built-in index functions. */
export const indexers = {
  namespace: (obj: KubeObject): readonly string[] => (obj.metadata.namespace ? [obj.metadata.namespace] : []),
  /** UIDs of all owners. */
  owner: (obj: KubeObject): readonly string[] => (obj.metadata.ownerReferences ?? []).map((o) => o.uid),
  /** UID of the controlling owner. */
  controller: (obj: KubeObject): readonly string[] => {
    const c = obj.metadata.ownerReferences?.find((o) => o.controller);
    return c ? [c.uid] : [];
  },
  /** The value of one label. */
  label:
    (key: string) =>
    (obj: KubeObject): readonly string[] => {
      const v = obj.metadata.labels?.[key];
      return v === undefined ? [] : [v];
    },
} as const;
