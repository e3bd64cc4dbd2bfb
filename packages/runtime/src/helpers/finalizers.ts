/**
 * @module helpers/finalizers
 * The finalizer flow, in one call from a reconcile:
 *
 * ```ts
 * import { done, type ObjectContext } from '@opkit/runtime';
 * import { finalizer } from '@opkit/runtime/helpers';
 * import { type AppService, AppServices } from './appservice.ts';
 *
 * export async function reconcile(app: AppService, ctx: ObjectContext<AppService>) {
 *   return finalizer(ctx.rawClient, AppServices, app, 'app.example.com/cleanup', {
 *     apply: async () => done(), // create or update the children
 *     cleanup: async () => done(), // release what the object holds outside the cluster
 *   }, { signal: ctx.signal });
 * }
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
 * per deletion — and cleanup runs only if it is the same object (uid), being deleted, still holding the finalizer.
 * A Conflict on the removal (another actor changed the object) is retried without cleaning again. Cleanup runs again
 * only if it threw, or if the process stopped between cleanup and the removal; write it to be safe to repeat.
 * Permissions needed on the kind: `get` and `patch`.
 * Caveat: an object deleted before the finalizer was added gets no cleanup (nothing needed it yet).
 */
import type { Client } from '../client/client.ts';
import { isConflict, isNotFound } from '../client/errors.ts';
import { type Kind, type KubeObject, refOf } from '../client/resource.ts';

/** Options of the finalizer helpers: pass the reconcile's `ctx.signal`, so a stop cuts their requests short. */
export interface FinalizerOptions {
  readonly signal?: AbortSignal | undefined;
}

/** Whether `obj` lists the finalizer `name` in `metadata.finalizers`. */
export function hasFinalizer(obj: KubeObject, name: string): boolean {
  return obj.metadata.finalizers?.includes(name) ?? false;
}

/** Adds the finalizer (no write if present); returns the object as written. */
export async function addFinalizer<T extends KubeObject>(
  client: Client,
  r: Kind<T>,
  obj: T,
  name: string,
  options: FinalizerOptions = {},
): Promise<T> {
  if (hasFinalizer(obj, name)) return obj;
  return writeFinalizers(client, r, obj, [...(obj.metadata.finalizers ?? []), name], options);
}

/** Removes the finalizer (no write if absent), keeping every other finalizer; returns the object as written. */
export async function removeFinalizer<T extends KubeObject>(
  client: Client,
  r: Kind<T>,
  obj: T,
  name: string,
  options: FinalizerOptions = {},
): Promise<T> {
  if (!hasFinalizer(obj, name)) return obj;
  return writeFinalizers(
    client,
    r,
    obj,
    (obj.metadata.finalizers ?? []).filter((f) => f !== name),
    options,
  );
}

function writeFinalizers<T extends KubeObject>(
  client: Client,
  r: Kind<T>,
  obj: T,
  finalizers: string[],
  options: FinalizerOptions,
): Promise<T> {
  return client.patch(
    r,
    refOf(obj),
    { metadata: { finalizers, resourceVersion: obj.metadata.resourceVersion } },
    options.signal ? { signal: options.signal } : {},
  );
}

/** What runs while the object lives (`apply`) and once it is being deleted (`cleanup`); `R` is a reconcile result. */
export interface FinalizerHandlers<T extends KubeObject, R> {
  /** The normal reconcile, once the finalizer is in place. */
  apply(obj: T): Promise<R>;
  /** Clean-up before the object goes away; throw to retry. */
  cleanup(obj: T): Promise<R>;
}

/**
 * The object as the apiserver has it now, if it is still the same object (same uid), being deleted and holding the
 * finalizer — the one `cleanup` may act on; undefined otherwise (gone, recreated under the name, or already done).
 */
async function stillToClean<T extends KubeObject>(
  client: Client,
  r: Kind<T>,
  obj: T,
  name: string,
  options: FinalizerOptions,
): Promise<T | undefined> {
  const live = await client.get(r, refOf(obj), options.signal ? { signal: options.signal } : {}).catch((err) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
  const same = live?.metadata.uid === obj.metadata.uid && live?.metadata.deletionTimestamp;
  return live && same && hasFinalizer(live, name) ? live : undefined;
}

/** Tries to remove the finalizer again after a Conflict (someone else changed the object) — without cleaning again. */
const REMOVE_ATTEMPTS = 5;

/**
 * Runs the finalizer flow described in the module comment: resolves with what the handler that ran returned, or
 * `undefined` (nothing more to do) when neither ran.
 */
export async function finalizer<T extends KubeObject, R>(
  client: Client,
  r: Kind<T>,
  obj: T,
  name: string,
  handlers: FinalizerHandlers<T, R>,
  options: FinalizerOptions = {},
): Promise<R | undefined> {
  if (!obj.metadata.deletionTimestamp) {
    const current = await addFinalizer(client, r, obj, name, options);
    return handlers.apply(current);
  }
  if (!hasFinalizer(obj, name)) return undefined;
  let live = await stillToClean(client, r, obj, name, options);
  if (!live) return undefined;
  const result = await handlers.cleanup(live);
  for (let attempt = 1; live; attempt++) {
    try {
      await removeFinalizer(client, r, live, name, options);
      break;
    } catch (err) {
      if (isNotFound(err)) break;
      if (!isConflict(err) || attempt >= REMOVE_ATTEMPTS) throw err;
      live = await stillToClean(client, r, live, name, options);
    }
  }
  return result;
}
