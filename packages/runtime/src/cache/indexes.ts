/**
 * @module cache/indexes
 * Typed index handles. `defineIndex(Pods, 'instance', fn)` names an index of one kind once; the handle is what reads
 * pass (`cache.list(Pods, { index: byInstance.is('web') })`, `ctx.cache.list(...)`), so a typo or an index of another kind
 * fails to compile instead of answering nothing at run time.
 *
 * Guarantees: the cache registers a handle's index on the kind's informer the first time it is used (or when passed
 * to `cache.addIndex`), indexing the objects already cached at once; registering one handle twice is a no-op, while a
 * different function under a name already taken fails with an `IndexError`.
 */
import type { Kind, KubeObject } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';
import type { IndexFunc } from './store.ts';

/** A query of one index: the objects whose index values contain `value`. */
export interface IndexQuery<T extends KubeObject> {
  /** The index queried. */
  readonly index: Index<T>;
  /** The value looked up: the objects whose index values include it. */
  readonly value: string;
}

/** A named index of one kind's objects. */
export interface Index<T extends KubeObject> {
  /** The kind whose objects are indexed. */
  readonly resource: Kind<T>;
  /** The index's name, unique per kind within a cache. */
  readonly name: string;
  /** The values an object is found under (none: it is not in the index). */
  readonly fn: IndexFunc<T>;
  /** The objects whose index values contain `value`. */
  is(value: string): IndexQuery<T>;
}

/** Why an index cannot be added. */
export type IndexErrorCode =
  /** Another index function already holds this name on the kind's informer (or store): give the index another name. */
  'IndexConflict';

/** An index that cannot be added: another index function holds its name (code `IndexConflict`). */
export class IndexError extends OpkitError<IndexErrorCode> {
  override readonly name = 'IndexError';
}

/** Names an index of `r`'s objects: `fn` returns the values an object is found under. */
export function defineIndex<T extends KubeObject>(r: Kind<T>, name: string, fn: IndexFunc<T>): Index<T> {
  const index: Index<T> = Object.freeze({
    resource: r,
    name,
    fn,
    is: (value: string): IndexQuery<T> => ({ index, value }),
  });
  return index;
}
