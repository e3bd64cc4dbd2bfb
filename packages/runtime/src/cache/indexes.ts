/**
 * @module cache/indexes
 * Typed index handles, as controller-runtime's field indexer (`mgr.GetFieldIndexer().IndexField(ctx, &Backup{},
 * "spec.storeName", fn)`). `defineIndex(Pods, 'instance', fn)` names an index of one kind once; `fieldIndex(Backups,
 * 'spec.storeName')` indexes a string field (or a list of strings) by its path, a path the kind's type has — a typo is
 * a type error. The handle is what reads pass (`cache.list(Pods, { index: byInstance.is('web') })`,
 * `ctx.cache.list(...)`), so a misspelt index or an index of another kind fails to compile instead of answering
 * nothing at run time.
 *
 * Guarantees: the cache registers a handle's index on the kind's informer the first time it is used (or when passed
 * to `cache.addIndex`), indexing the objects already cached at once; registering one handle twice is a no-op, while a
 * different function under a name already taken fails with an `IndexError`. `fieldIndex` returns the same handle for
 * the same kind and path, so any number of callers (and `referencing`) share one index.
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

/** A named index of one kind's objects; `N` is its name (a field path for `fieldIndex`). */
export interface Index<T extends KubeObject, N extends string = string> {
  /** The kind whose objects are indexed. */
  readonly resource: Kind<T>;
  /** The index's name, unique per kind within a cache. */
  readonly name: N;
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
export function defineIndex<T extends KubeObject, const N extends string>(
  r: Kind<T>,
  name: N,
  fn: IndexFunc<T>,
): Index<T, N> {
  const index: Index<T, N> = Object.freeze({
    resource: r,
    name,
    fn,
    is: (value: string): IndexQuery<T> => ({ index, value }),
  });
  return index;
}

/** One level less of `FieldPath`'s depth. */
type Shallower = [never, 0, 1, 2, 3, 4, 5];

/**
 * The dotted paths of `T` (at most 6 deep) that end at a string or a list of strings, e.g. `'spec.storeName'` or
 * `'spec.template.spec.serviceAccountName'`: what `fieldIndex` and `referencing` accept. Lists of objects are not
 * walked, nor maps (`metadata.labels`, `Record<string, …>`): their keys may hold dots (`app.kubernetes.io/name`), which
 * a dotted path cannot name — index a label or a map entry with `defineIndex`.
 */
export type FieldPath<T, Depth extends number = 5> = [Depth] extends [never]
  ? never
  : T extends readonly unknown[]
    ? never
    : T extends object
      ? {
          [K in keyof T & string]-?: NonNullable<T[K]> extends string | readonly string[]
            ? K
            : NonNullable<T[K]> extends object
              ? string extends keyof NonNullable<T[K]>
                ? never // a map: see above
                : `${K}.${FieldPath<NonNullable<T[K]>, Shallower[Depth]>}`
              : never;
        }[keyof T & string]
      : never;

/** The string values at the path `parts` of `obj`: a string is one value, a list its strings, anything else none. */
function fieldValues(obj: unknown, parts: readonly string[]): readonly string[] {
  let at: unknown = obj;
  for (const part of parts) {
    if (typeof at !== 'object' || at === null) return [];
    at = (at as Record<string, unknown>)[part];
  }
  if (typeof at === 'string') return at === '' ? [] : [at];
  return Array.isArray(at) ? at.filter((v): v is string => typeof v === 'string' && v !== '') : [];
}

/** `fieldIndex`'s handles by kind and path: each `Index<T, P>` of the kind `T` it is keyed by. */
const fieldIndexes = new WeakMap<object, Map<string, unknown>>();

/**
 * The index of `r`'s objects by the string field at `path` (its name is the path): an object is found under the
 * field's value, or each value of a list of strings; an object without it (or with '') is not in the index. The same
 * kind and path give the same handle, so it may be declared wherever it is used. Register it up front with
 * `mgr.cache.addIndex(…)`, or let the first read through it do so.
 *
 * @example
 * ```ts
 * import type { Manager } from '@opkit/runtime';
 * import { fieldIndex } from '@opkit/runtime/cache';
 * import { Pods } from '@opkit/runtime/kinds';
 *
 * declare const mgr: Manager;
 * const byNode = fieldIndex(Pods, 'spec.nodeName'); // fieldIndex(Pods, 'spec.nodeNme') does not compile
 * const onNode1 = await mgr.cache.list(Pods, { index: byNode.is('node-1') });
 * ```
 */
export function fieldIndex<T extends KubeObject, const P extends FieldPath<T>>(r: Kind<T>, path: P): Index<T, P> {
  let byPath = fieldIndexes.get(r);
  if (!byPath) {
    byPath = new Map();
    fieldIndexes.set(r, byPath);
  }
  const known = byPath.get(path) as Index<T, P> | undefined;
  if (known) return known;
  const parts = path.split('.'); // once: the index function runs on every add and update of the kind
  const index = defineIndex(r, path, (obj: T) => fieldValues(obj, parts));
  byPath.set(path, index);
  return index;
}
