/**
 * @module controller/predicates
 * Event filters: which changes of a watched object should enqueue a request. A `Predicate` answers per event kind
 * (an absent method lets the event through). Combine with `and`, `or`, `not`.
 */
import type { KubeObject } from '../client/resource.ts';

/**
 * Which events of a watched kind enqueue requests: each method answers for its kind of event, and an absent one lets
 * the event through.
 */
export interface Predicate<T extends KubeObject = KubeObject> {
  /** Whether an added object (also each object of the initial list) passes. */
  create?(obj: T): boolean;
  /** Whether a change from `old` to `obj` passes. */
  update?(old: T, obj: T): boolean;
  /** Whether a deleted object (its last state) passes. */
  delete?(obj: T): boolean;
}

const sameRecord = (
  a: Readonly<Record<string, string>> | undefined,
  b: Readonly<Record<string, string>> | undefined,
) => {
  const ak = Object.keys(a ?? {});
  const bk = Object.keys(b ?? {});
  return ak.length === bk.length && ak.every((k) => a?.[k] === b?.[k]);
};

/** Updates only when `metadata.generation` changed (a spec change; status-only updates are ignored). */
export const generationChanged: Predicate = {
  update: (old, obj) => old.metadata.generation !== obj.metadata.generation,
};

/** Updates only when `metadata.labels` changed; creates and deletes pass. */
export const labelsChanged: Predicate = {
  update: (old, obj) => !sameRecord(old.metadata.labels, obj.metadata.labels),
};

/** Updates only when `metadata.annotations` changed; creates and deletes pass. */
export const annotationsChanged: Predicate = {
  update: (old, obj) => !sameRecord(old.metadata.annotations, obj.metadata.annotations),
};

/** Updates only when the object really changed (drops resync no-ops). */
export const resourceVersionChanged: Predicate = {
  update: (old, obj) => old.metadata.resourceVersion !== obj.metadata.resourceVersion,
};

/** A predicate from one function applied to every event's (new) object. */
export function predicate<T extends KubeObject>(fn: (obj: T) => boolean): Predicate<T> {
  return { create: fn, update: (_old, obj) => fn(obj), delete: fn };
}

type EventKind = 'create' | 'update' | 'delete';

function test<T extends KubeObject>(p: Predicate<T>, kind: EventKind, old: T | undefined, obj: T): boolean {
  if (kind === 'create') return p.create ? p.create(obj) : true;
  if (kind === 'delete') return p.delete ? p.delete(obj) : true;
  return p.update ? p.update(old as T, obj) : true;
}

/** Passes an event when every one of `ps` does (an absent method counts as passing). */
export function and<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return combine((kind, old, obj) => ps.every((p) => test(p, kind, old, obj)));
}

/** Passes an event when at least one of `ps` does (an absent method counts as passing). */
export function or<T extends KubeObject>(...ps: Predicate<T>[]): Predicate<T> {
  return combine((kind, old, obj) => ps.some((p) => test(p, kind, old, obj)));
}

/** Passes an event when `p` does not (an absent method of `p` passes, so `not` blocks that kind of event). */
export function not<T extends KubeObject>(p: Predicate<T>): Predicate<T> {
  return combine((kind, old, obj) => !test(p, kind, old, obj));
}

function combine<T extends KubeObject>(fn: (kind: EventKind, old: T | undefined, obj: T) => boolean): Predicate<T> {
  return {
    create: (obj) => fn('create', undefined, obj),
    update: (old, obj) => fn('update', old, obj),
    delete: (obj) => fn('delete', undefined, obj),
  };
}

/** Whether every predicate lets this event through. */
export function allow<T extends KubeObject>(
  ps: readonly Predicate<T>[],
  kind: EventKind,
  old: T | undefined,
  obj: T,
): boolean {
  return ps.every((p) => test(p, kind, old, obj));
}
