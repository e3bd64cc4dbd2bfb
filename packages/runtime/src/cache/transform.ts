/**
 * @module cache/transform
 * Object transforms for the cache: functions applied to every object of a resource before it is stored, so the cache
 * holds only what the operator reads (as controller-runtime's `cache.Options.ByObject[].Transform`).
 * - `dropManagedFields`: removes `metadata.managedFields` (the cache's default).
 * - `keepFields(...paths)`: keeps `apiVersion`, `kind`, `metadata` and the given dotted paths (e.g. `status.phase`),
 *   and drops everything else — for a pod an operator only counts, most of its bytes are its spec. A path through a
 *   list applies to each of its items (`spec.containers.image` keeps each container's image).
 * Guarantees: transforms change the object they are given (it was just decoded and is not shared yet) and return it;
 * they never throw on objects that lack a path. Both carry a field mask (`maskOf`) that the client applies while it
 * decodes a protobuf answer, so the fields they drop are skipped unread; the transform still runs after, so the
 * stored object is the same whether the answer was protobuf or JSON. Caveat: a transform is per resource and per process: every
 * controller reading that resource from the cache sees the trimmed objects, so keep every field any of them reads.
 */
import type { FieldMask } from '../client/protobuf/codec.ts';
import type { KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { markPartial } from '../internal/partial.ts';

/** Applied to each object of a resource before it is stored; it may change and return the object it is given. */
export type Transform<T extends KubeObject = KubeObject> = (obj: T) => T;

/** The field masks of the transforms that have one: what a decoder may skip, since the transform drops it. */
const masks = new WeakMap<object, FieldMask>();

/** The field mask of `fn` (see the module comment), or `undefined`: a transform of the user's own drops nothing. */
export function maskOf<T extends KubeObject>(fn: Transform<T> | undefined): FieldMask | undefined {
  return fn === undefined ? undefined : masks.get(fn);
}

/** Removes `metadata.managedFields` (the cache's default transform) and returns the object. */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata.managedFields !== undefined) delete obj.metadata.managedFields;
  return obj;
}

const NO_MANAGED_FIELDS: FieldMask = { rest: true, fields: new Map([['managedFields', false]]) };
const DROP_MANAGED_FIELDS: FieldMask = { rest: true, fields: new Map([['metadata', NO_MANAGED_FIELDS]]) };
masks.set(dropManagedFields, DROP_MANAGED_FIELDS);

/** `fn`, with every object it returns marked as partial (internal/partial.ts), and its mask. */
export function markingPartial<T extends KubeObject>(fn: Transform<T>): Transform<T> {
  const marked = (obj: T) => markPartial(fn(obj));
  const mask = masks.get(fn);
  if (mask !== undefined) masks.set(marked, mask);
  return marked;
}

/**
 * `fn` then `dropManagedFields`, as one transform whose mask is both (`fn`'s mask, or none when it has none, and
 * `metadata.managedFields` skipped).
 */
export function thenDropManagedFields<T extends KubeObject>(fn: Transform<T> | undefined): Transform<T> {
  if (fn === undefined) return dropManagedFields;
  const both = (obj: T) => dropManagedFields(fn(obj));
  const mask = masks.get(fn);
  if (mask !== undefined) masks.set(both, withoutManagedFields(mask));
  return both;
}

/** `mask`, with `metadata.managedFields` skipped as well. */
function withoutManagedFields(mask: FieldMask): FieldMask {
  const meta = mask.fields.get('metadata') ?? mask.rest;
  if (meta === false) return mask;
  const metaMask: FieldMask =
    meta === true
      ? NO_MANAGED_FIELDS
      : { rest: meta.rest, fields: new Map([...meta.fields, ['managedFields', false]]) };
  return { rest: mask.rest, fields: new Map([...mask.fields, ['metadata', metaMask]]) };
}

/** Keeps `apiVersion`, `kind`, `metadata` and the dotted `paths`; every other field is dropped. */
export function keepFields<T extends KubeObject>(...paths: readonly string[]): Transform<T> {
  const tree = new Map<string, unknown>();
  for (const path of paths) {
    let node = tree;
    const parts = path.split('.');
    if (parts.includes('')) throw new UsageError('InvalidArgument', `keepFields: "${path}" has an empty segment`);
    for (const [i, part] of parts.entries()) {
      if (i === parts.length - 1) node.set(part, true);
      else {
        const next = node.get(part);
        if (next === true) break; // a shorter path keeps the whole field already
        const child = next instanceof Map ? next : new Map<string, unknown>();
        node.set(part, child);
        node = child;
      }
    }
  }
  for (const always of ['apiVersion', 'kind', 'metadata']) tree.set(always, true);
  const fn = (obj: T) => prune(obj as unknown as Record<string, unknown>, tree) as unknown as T;
  masks.set(fn, maskOfTree(tree));
  return fn;
}

function maskOfTree(tree: Map<string, unknown>): FieldMask {
  const fields = new Map<string, FieldMask | boolean>();
  for (const [key, rule] of tree) fields.set(key, rule instanceof Map ? maskOfTree(rule) : true);
  return { rest: false, fields };
}

function prune(value: Record<string, unknown>, keep: Map<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(value)) {
    const rule = keep.get(key);
    if (rule === undefined) delete value[key];
    else if (rule instanceof Map) pruneEach(value[key], rule as Map<string, unknown>);
  }
  return value;
}

/** Prunes an object, or each object of a list, by `keep`; anything else is kept as it is. */
function pruneEach(child: unknown, keep: Map<string, unknown>): void {
  if (Array.isArray(child)) for (const item of child) pruneEach(item, keep);
  else if (typeof child === 'object' && child !== null) prune(child as Record<string, unknown>, keep);
}
