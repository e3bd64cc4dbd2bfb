/**
 * @module helpers/finalizers
 * The finalizer flow, in one call from a reconcile:
 *
 * ```ts
 * return finalizer(ctx.client, AppServices, app, 'app.example.com/cleanup', {
 *   apply: async (app) => { …create/update children…; return done(); },
 *   cleanup: async (app) => { …release what the object holds outside the cluster…; return done(); },
 * });
 * ```
 * Expected flow: while the object lives, the finalizer is added first (before `apply` may create anything that
 * needs cleaning up), then `apply` runs. Once it is being deleted (deletionTimestamp set), `cleanup` runs and the
 * finalizer is removed only after cleanup succeeded; a thrown cleanup keeps it (retried with backoff).
 *
 * Guarantees: idempotent (adding twice or removing an absent finalizer writes nothing). Writes are merge patches of
 * the finalizer list carrying the object's resourceVersion, so a concurrent change fails with Conflict (retried)
 * instead of dropping someone else's finalizer — e.g. `foregroundDeletion`, which stays in place.
 * Cleanup runs once per object: the cache can still show the finalizer for a moment after it was removed (the
 * watch event of that write is on its way), so before cleaning up the object is read from the apiserver — one GET
 * per deletion. It runs again only if it threw, or if the process stopped between cleanup and the removal; write
 * it to be safe to repeat. Permissions needed on the kind: `get` and `patch`.
 * Caveat: an object deleted before the finalizer was added gets no cleanup (nothing needed it yet).
 */
import type { Client } from '../client/client.ts';
import { isNotFound } from '../client/errors.ts';
import type { KubeObject, ResourceType } from '../client/resource.ts';
import type { Result } from '../controller/reconcile.ts';

export function hasFinalizer(obj: KubeObject, name: string): boolean {
  return obj.metadata.finalizers?.includes(name) ?? false;
}

/** Adds the finalizer (no write if present); returns the object as written. */
export async function addFinalizer<T extends KubeObject>(
  client: Client,
  r: ResourceType<T>,
  obj: T,
  name: string,
): Promise<T> {
  if (hasFinalizer(obj, name)) return obj;
  return writeFinalizers(client, r, obj, [...(obj.metadata.finalizers ?? []), name]);
}

/** Removes the finalizer (no write if absent), keeping every other finalizer; returns the object as written. */
export async function removeFinalizer<T extends KubeObject>(
  client: Client,
  r: ResourceType<T>,
  obj: T,
  name: string,
): Promise<T> {
  if (!hasFinalizer(obj, name)) return obj;
  return writeFinalizers(
    client,
    r,
    obj,
    (obj.metadata.finalizers ?? []).filter((f) => f !== name),
  );
}

function writeFinalizers<T extends KubeObject>(
  client: Client,
  r: ResourceType<T>,
  obj: T,
  finalizers: string[],
): Promise<T> {
  return client.patch(r, refOf(obj), { metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion } });
}

function refOf(obj: KubeObject): { namespace?: string; name: string } {
  return {
    ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
    name: obj.metadata.name ?? '',
  };
}

export interface FinalizerHandlers<T extends KubeObject> {
  /** The normal reconcile, once the finalizer is in place. */
  apply(obj: T): Promise<Result>;
  /** Clean-up before the object goes away; throw to retry. */
  cleanup(obj: T): Promise<Result>;
}

/** Runs the finalizer flow described in the module comment. */
export async function finalizer<T extends KubeObject>(
  client: Client,
  r: ResourceType<T>,
  obj: T,
  name: string,
  handlers: FinalizerHandlers<T>,
): Promise<Result> {
  if (obj.metadata.deletionTimestamp) {
    if (!hasFinalizer(obj, name)) return {};
    const live = await client.get(r, refOf(obj)).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    if (!live || !hasFinalizer(live, name)) return {};
    const result = await handlers.cleanup(live);
    await removeFinalizer(client, r, live, name);
    return result;
  }
  const current = await addFinalizer(client, r, obj, name);
  return handlers.apply(current);
}
