/**
 * @module cache/transform
 * Object transforms for the cache: functions applied to every object of a resource before it is stored, so the cache
 * holds only what the operator reads (as controller-runtime's `cache.Options.ByObject[].Transform`).
 * - `dropManagedFields`: removes `metadata.managedFields` (the cache's default).
 * - `keepFields(...paths)`: keeps `apiVersion`, `kind`, `metadata` and the given dotted paths (e.g. `status.phase`),
 *   and drops everything else — for a pod an operator only counts, most of its bytes are its spec.
 * Guarantees: transforms change the object they are given (it was just decoded and is not shared yet) and return it;
 * they never throw on objects that lack a path. Caveat: a transform is per resource and per process: every
 * controller reading that resource from the cache sees the trimmed objects, so keep every field any of them reads.
 */
import type { KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';

/** Applied to each object of a resource before it is stored; it may change and return the object it is given. */
export type Transform<T extends KubeObject = KubeObject> = (obj: T) => T;

/** Removes `metadata.managedFields` (the cache's default transform) and returns the object. */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  if (obj.metadata.managedFields !== undefined) delete obj.metadata.managedFields;
  return obj;
}

/** Keeps `apiVersion`, `kind`, `metadata` and the dotted `paths`; every other field is dropped. */
export function keepFields<T extends KubeObject>(...paths: readonly string[]): Transform<T> {
  const tree = new Map<string, unknown>();
  for (const path of paths) {
    let node = tree;
    const parts = path.split('.');
    parts.forEach((part, i) => {
      if (part === '') throw new UsageError('InvalidArgument', `keepFields: "${path}" has an empty segment`);
      if (i === parts.length - 1) node.set(part, true);
      else {
        const next = node.get(part);
        if (next === true) return;
        const child = next instanceof Map ? next : new Map<string, unknown>();
        node.set(part, child);
        node = child;
      }
    });
  }
  for (const always of ['apiVersion', 'kind', 'metadata']) tree.set(always, true);
  return (obj: T) => prune(obj as unknown as Record<string, unknown>, tree) as unknown as T;
}

function prune(value: Record<string, unknown>, keep: Map<string, unknown>): Record<string, unknown> {
  for (const key of Object.keys(value)) {
    const rule = keep.get(key);
    if (rule === undefined) delete value[key];
    else if (rule instanceof Map) {
      const child = value[key];
      if (typeof child === 'object' && child !== null && !Array.isArray(child))
        prune(child as Record<string, unknown>, rule as Map<string, unknown>);
    }
  }
  return value;
}
