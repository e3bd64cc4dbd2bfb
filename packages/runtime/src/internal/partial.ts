/**
 * @module internal/partial
 * Which objects a cache transform made: they may lack fields the stored object has (`keepFields`, a user transform),
 * so a write of the whole object would send less than is stored. helpers/status.ts merge-patches the status of such an
 * object instead of updating it. Objects are marked by identity (a `WeakSet`): nothing is kept once the cache drops
 * them.
 */
const partial = new WeakSet<object>();

/** Marks `obj` as made by a cache transform; returns it. */
export function markPartial<T extends object>(obj: T): T {
  partial.add(obj);
  return obj;
}

/** Whether `obj` was made by a cache transform. */
export function isPartial(obj: object): boolean {
  return partial.has(obj);
}
