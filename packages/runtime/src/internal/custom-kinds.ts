/**
 * @module internal/custom-kinds
 * Which `Kind`s are custom resources with a status subresource, as `defineKind` made them (each version's `Kind`
 * too): the apiserver's status strategy for custom resources keeps everything but the status from the stored object,
 * so their status can be written by an update of the object as read (helpers/status.ts). A `Kind` made any other way
 * (`resource()`, a copy) is not marked, and its status is merge-patched.
 */
const marked = new WeakSet<object>();

/** Marks `kind` as a custom kind with a status subresource; returns it. */
export function markStatusSubresource<K extends object>(kind: K): K {
  marked.add(kind);
  return kind;
}

/** Whether `kind` was marked by `markStatusSubresource`. */
export function hasCustomStatus(kind: object): boolean {
  return marked.has(kind);
}
