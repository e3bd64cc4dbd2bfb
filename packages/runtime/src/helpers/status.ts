/**
 * @module helpers/status
 * Write status only when it changed. `updateStatusIfChanged` compares the desired status with the object's current
 * one (deep, key order ignored) and writes through the status subresource only on a difference, with the object's
 * resourceVersion (a stale object fails with Conflict and the reconcile is retried with fresh state). A controller
 * that reconciles often therefore does not write at all while nothing changes — the hot-loop failure (status patches
 * with no real change) cannot happen.
 */
import type { Client } from '../client/client.ts';
import type { KubeObject, ResourceType } from '../client/resource.ts';

/** Deep equality of JSON values (object key order ignored; undefined members count as absent). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  const ak = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const bk = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  return (
    ak.length === bk.length &&
    ak.every((k) => jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

/**
 * Writes `status` if it differs from `obj.status`. Resolves with the written object, or `undefined` when nothing
 * needed writing.
 */
export async function updateStatusIfChanged<T extends KubeObject & { status?: unknown }>(
  client: Client,
  r: ResourceType<T>,
  obj: T,
  status: NonNullable<T['status']>,
): Promise<T | undefined> {
  if (jsonEqual(obj.status, status)) return undefined;
  return client.updateStatus(r, { ...obj, status });
}
