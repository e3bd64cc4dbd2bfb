/**
 * @module helpers/status
 * Write status only when it changed. `updateStatusIfChanged` compares the desired status with the object's current
 * one (deep, key order ignored) and writes only on a difference — so a controller reconciling in a loop writes nothing
 * while nothing changes (the hot-loop failure, status patches with no real change, cannot happen).
 *
 * The write is a JSON merge patch of the status subresource that sets every field of the new status and removes (null)
 * the top-level fields it no longer has. It carries no resourceVersion: a status computed from a cache that is a moment
 * behind is not refused with a Conflict (which would cost a rate-limited retry); it is written, and the next reconcile
 * — triggered by whatever made the cache move — writes the correction. Status is the controller's own observation, so
 * last-writer-wins is the right rule for it.
 *
 * Read-your-own-writes: the status last written for an object is remembered with the resourceVersion of the object it
 * was computed from. A later call with that same resourceVersion — the cache has not seen the write yet — compares
 * with the written status instead, so an event that arrives before the write's own (a child's, say) does not rewrite
 * the same status. Once the cached object moves on, it is the reference again.
 */
import type { Client } from '../client/client.ts';
import { type KubeObject, type ResourceType, resourceId } from '../client/resource.ts';

/** The status last written per object (`resource/uid`), with the resourceVersion it was computed from. */
const written = new Map<string, { readonly from: string; readonly status: unknown }>();

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

/** The merge patch that turns status `from` into `to` (top-level fields of `from` missing in `to` become null). */
export function statusPatch(from: unknown, to: unknown): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  if (from && typeof from === 'object' && !Array.isArray(from)) {
    for (const k of Object.keys(from)) patch[k] = null;
  }
  if (to && typeof to === 'object') {
    for (const [k, v] of Object.entries(to)) if (v !== undefined) patch[k] = v;
  }
  return { status: patch };
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
  const id = `${resourceId(r)}/${obj.metadata.uid ?? obj.metadata.name}`;
  const rv = obj.metadata.resourceVersion;
  const mine = written.get(id);
  if (mine && mine.from !== rv) written.delete(id); // the cache moved on: it is the reference again
  const current = mine && mine.from === rv ? mine.status : obj.status;
  if (jsonEqual(current, status)) return undefined;
  const ref = obj.metadata.namespace
    ? { namespace: obj.metadata.namespace, name: obj.metadata.name ?? '' }
    : { name: obj.metadata.name ?? '' };
  const out = await client.patchStatus(r, ref, statusPatch(current, status));
  if (rv !== undefined) written.set(id, { from: rv, status: structuredClone(status) });
  return out;
}
