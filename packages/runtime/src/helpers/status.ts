/**
 * @module helpers/status
 * Write status only when it changed — the one mechanism behind both `ctx.status(status)` (object-first reconcilers)
 * and `updateStatusIfChanged(client, kind, obj, status)` (everything else). The desired status is compared with what
 * the server has, as far as this process knows (deep, key order ignored), and written only on a difference: a
 * controller reconciling in a loop writes nothing while nothing changes (the hot loop of status patches with no real
 * change cannot happen).
 *
 * How it writes. For a custom kind made by `defineKind` with the status subresource (each of its versions), an
 * update (PUT) of the status subresource: the object as read, with the desired status, its newest known
 * resourceVersion and no managedFields (the apiserver keeps the stored ones). The apiserver keeps everything but the
 * status from the stored object; its field manager compares the object sent with the stored one, so the object is
 * sent whole, or other managers would lose the metadata fields it lacks (labels, annotations, finalizers). An update
 * costs the apiserver less CPU than a merge patch, which it must apply to the stored object and decode again
 * (docs/benchmarks.md, "What issue 45 changed"). A Conflict (the object moved on since that resourceVersion) is not
 * retried with backoff: the same status is written at once by a merge patch instead, as every other kind's is, and
 * as an object a cache transform made is (it may lack stored fields: internal/partial.ts). An update the RBAC forbids
 * (the operator is granted `patch` on the status subresource and not `update`) makes that kind's status writes merge
 * patches for the rest of the process; any other refusal (an admission webhook's or policy's) is the caller's error,
 * as the patch's would be.
 *
 * The merge patch is an RFC 7386 JSON merge patch of the status subresource (`mergePatch`): it sets every field of the
 * desired status and removes (null) every field the known status has and the desired one no longer has, at any depth;
 * arrays are replaced whole. Applied to the known status it gives exactly the desired one (for statuses without null
 * members: in a merge patch, null means "remove"). It sets the unchanged fields too, unlike controller-runtime's
 * `client.MergeFrom` (which sends only the differences), so a patch computed from a cache a moment behind still leaves
 * every field it names as desired. It carries no resourceVersion. Either way, a status computed from a cache that is
 * a moment behind is never refused with a Conflict (which would cost a rate-limited retry); it is written, and the
 * next reconcile — triggered by whatever made the cache move — writes the correction. Status is the controller's own
 * observation, so last-writer-wins is the right rule for it.
 *
 * Read-your-own-writes: "what the server has" is the object's status, unless a status was written from that very
 * object — the object the cache handed out, which it replaces with a new one on every change it sees. Then the
 * written status is the reference, so an event that arrives before the write's own (a child's, say) does not rewrite
 * the same status. The written status is attached to that object (a `WeakMap`), not kept by name: once the cache
 * replaces the object (the write's own event, or anyone's) or drops it (a delete), nothing of it is kept. Memory is
 * bounded by the objects the cache holds; nothing is kept per object ever written. Read-your-own-writes holds for the
 * object as read (from the cache, or the one a `ctx.status` reconcile was given); a copy of it compares with its own
 * status.
 */
import type { Client } from '../client/client.ts';
import { ApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, refOf } from '../client/resource.ts';
import { hasCustomStatus } from '../internal/custom-kinds.ts';
import { isPartial } from '../internal/partial.ts';

/** The status type of a kind's objects. */
export type StatusOf<T> = T extends { status?: infer S } ? NonNullable<S> : never;

/** The status last written from an object the cache handed out, and the resourceVersion it made, on that object. */
const written = new WeakMap<KubeObject, { readonly status: unknown; readonly resourceVersion: string | undefined }>();

/** The custom kinds (`apiVersion kind`) whose status update the RBAC forbids: their status is merge-patched. */
const patchOnly = new Set<string>();
/** How the apiserver's RBAC authorizer words a denied update (an admission webhook's refusal is also Forbidden). */
const RBAC_DENIAL = /cannot update resource/;

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
 * The RFC 7386 merge patch that turns `from` into `to`: every member of `to` is set, every member of `from` that `to`
 * lacks (or has as `undefined`) is null, at any depth where both are objects; arrays and other values are replaced
 * whole. Undefined members of `to` are left out (JSON has none). The patch shares `to`'s values (send it, do not keep
 * it).
 */
export function mergePatch(from: unknown, to: unknown): unknown {
  if (!isJsonObject(to)) return to;
  const patch: Record<string, unknown> = {};
  if (isJsonObject(from)) {
    for (const [k, v] of Object.entries(from)) if (v !== undefined && to[k] === undefined) patch[k] = null;
  }
  for (const [k, v] of Object.entries(to)) {
    if (v === undefined) continue;
    const was = isJsonObject(from) ? from[k] : undefined;
    patch[k] = isJsonObject(v) && isJsonObject(was) ? mergePatch(was, v) : v;
  }
  return patch;
}

/** The merge patch of the status subresource that turns status `from` into `to` (see `mergePatch`). */
export function statusPatch(from: unknown, to: unknown): { status: unknown } {
  return { status: mergePatch(from, to) };
}

/**
 * Writes `status` if it differs from what the server has (see the module comment). Resolves with the written object,
 * or `undefined` when nothing needed writing.
 */
export async function updateStatusIfChanged<T extends KubeObject>(
  client: Client,
  r: Kind<T, unknown>,
  obj: T,
  status: StatusOf<T>,
): Promise<T | undefined> {
  const mine = written.get(obj);
  const current = mine ? mine.status : (obj as { status?: unknown }).status;
  if (jsonEqual(current, status)) return undefined;
  const resourceVersion = mine ? mine.resourceVersion : obj.metadata.resourceVersion;
  const updated = await updateStatus(client, r, obj, resourceVersion, status);
  const out = updated ?? (await client.patchStatus(r, refOf(obj), statusPatch(current, status)));
  // after its own update the object as read is the stored one but for the status, at the version the update made;
  // after a merge patch others may have changed it, so a next write from it does not claim that version
  const next = updated === undefined ? undefined : out.metadata.resourceVersion;
  written.set(obj, { status: structuredClone(status), resourceVersion: next });
  return out;
}

/**
 * The status update of a custom kind (see the module comment); `undefined` when the kind's status is merge-patched
 * instead, or the update met a Conflict or was Forbidden.
 */
async function updateStatus<T extends KubeObject>(
  client: Client,
  r: Kind<T, unknown>,
  obj: T,
  resourceVersion: string | undefined,
  status: unknown,
): Promise<T | undefined> {
  const key = `${r.apiVersion} ${r.kind}`;
  if (!hasCustomStatus(r) || resourceVersion === undefined || patchOnly.has(key) || isPartial(obj)) return undefined;
  const { managedFields: _stored, ...metadata } = obj.metadata;
  const body = { ...obj, apiVersion: r.apiVersion, kind: r.kind, metadata: { ...metadata, resourceVersion }, status };
  try {
    return await client.updateStatus(r, body);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    if (err.code === 'Forbidden' && RBAC_DENIAL.test(err.message)) patchOnly.add(key);
    else if (err.code !== 'Conflict') throw err;
    return undefined;
  }
}

function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
