/**
 * @module controller/object
 * The object-first reconciler, as controller-runtime's `ObjectReconciler` over its request-based `Reconciler`:
 * `reconcile(obj, ctx)` gets the primary object itself — read from the cache, present, not being deleted — and a
 * context that does the bookkeeping a reconciler would otherwise forget. `objectReconciler` adapts it to the
 * request-based contract below (`Reconciler`), which stays usable alone.
 *
 * The context (`ObjectContext`), for the object being reconciled:
 * - `ctx.client` aborts every request when the reconcile's signal does (a drain cuts a hung request short);
 * - `ctx.get`, `ctx.list`: cache reads (`get` answers `undefined` for a missing object); `ctx.owned(kind)`: the
 *   objects of `kind` this object controls (the built-in `controller` index), not counting those being deleted
 *   (`ctx.owned(metadataOnly(kind))` reads them from a metadata-only informer);
 * - `ctx.create(kind, obj)`: sets this object as the controller owner (and its namespace when none is given), creates
 *   with the reconcile's signal and records the create expectation, so a cache that lags cannot make a duplicate
 *   (expectations are kept for the kinds the cache follows: those the controller watches, whole or metadata only);
 * - `ctx.delete(kind, obj)`: deletes with a uid precondition (never a successor with the same name) and records the
 *   delete expectation; answers false when the object was already gone or replaced;
 * - `ctx.apply(kind, obj)`: server-side apply as the controller's field manager (forced), owner reference set; a new
 *   object's create is expected as above;
 * - `ctx.status(status)`: `updateStatusIfChanged` (helpers/status.ts) on the object: writes the status subresource
 *   only when it differs from what the server has (the object's status, or the one this process wrote from it), by a
 *   merge patch that also removes the fields the new status no longer has, at any depth;
 * - `ctx.events.normal(reason, message)` / `.warning(…)`: Events about this object (aggregated, rate limited).
 *
 * Objects being deleted go to the `finalize` handler when one is given: its finalizer is added before `reconcile`
 * first runs, and removed once `cleanup` succeeded (see helpers/finalizers.ts). Without one, a terminating object is
 * not reconciled (owner references let the garbage collector remove its children).
 *
 * Guarantees: `reconcile` never sees a missing object or, without a finalizer, one being deleted. Writes through
 * `ctx` never change the objects passed in (they are copied before the owner reference is set), and an owner
 * reference the garbage collector would not honour (another namespace, another controller) fails the write with an
 * `OwnerReferenceError` before any request is made.
 */
import type { CacheListOptions } from '../cache/cache.ts';
import { isApiError } from '../client/errors.ts';
import {
  type InputOf,
  type KubeObject,
  type ObjectOf,
  type ObjectRef,
  type ResourceType,
  refOf,
  resourceId,
} from '../client/resource.ts';
import type { EventType } from '../helpers/events.ts';
import { finalizer } from '../helpers/finalizers.ts';
import { setControllerReference } from '../helpers/ownerrefs.ts';
import { type StatusOf, updateStatusIfChanged } from '../helpers/status.ts';
import type { ReconcileContext, Reconciler, Request, Result } from './reconcile.ts';

export type { StatusOf } from '../helpers/status.ts';

/** Events about the object being reconciled. */
export interface ObjectEvents {
  /** A `Normal` Event about the object: `reason` in UpperCamelCase (`Created`), `message` for people. */
  normal(reason: string, message: string): void;
  /** A `Warning` Event about the object: something an operator of the cluster should look at. */
  warning(reason: string, message: string): void;
  /** An Event about another object. */
  about<C extends KubeObject>(r: ResourceType<C>, obj: C, type: EventType, reason: string, message: string): void;
}

/**
 * What an object-first reconcile gets besides the object: cache reads, writes that do the bookkeeping (owner
 * references, expectations, status only on change), Events, and the request's logger and signal. See the module
 * comment.
 *
 * @showModuleComment
 */
export interface ObjectContext<T extends KubeObject> extends ReconcileContext {
  /** Events about this object (aggregated and rate limited as client-go's recorder). */
  readonly events: ObjectEvents;
  /** The cached object, or `undefined` when there is none. */
  get<C extends KubeObject>(r: ResourceType<C>, ref: ObjectRef): Promise<C | undefined>;
  /** Cached objects (by namespace, label selector or index; see `CacheListOptions`). */
  list<C extends KubeObject>(r: ResourceType<C>, options?: CacheListOptions<C>): Promise<C[]>;
  /** The objects of `r` this object controls; those being deleted only with `{ terminating: true }`. */
  owned<C extends KubeObject>(r: ResourceType<C>, options?: { readonly terminating?: boolean }): Promise<C[]>;
  /** Creates `obj` controlled by this object (unless `{ owned: false }`), expecting its create. */
  create<R extends ResourceType<KubeObject, unknown>>(
    r: R,
    obj: InputOf<R>,
    options?: { readonly owned?: boolean },
  ): Promise<ObjectOf<R>>;
  /** Server-side apply of `obj` as the controller's field manager, controlled by this object (unless `owned: false`). */
  apply<R extends ResourceType<KubeObject, unknown>>(
    r: R,
    obj: InputOf<R>,
    options?: { readonly owned?: boolean },
  ): Promise<ObjectOf<R>>;
  /** Deletes `obj` (uid precondition), expecting its delete; false when it was already gone or replaced. */
  delete<C extends KubeObject>(r: ResourceType<C>, obj: C): Promise<boolean>;
  /** `updateStatusIfChanged` on this object: writes `status` if it differs from what the server has; true if it wrote. */
  status(status: StatusOf<T>): Promise<boolean>;
}

/** What an object-first reconcile returns: a `Result`, or nothing for `done()`. */
// biome-ignore lint/suspicious/noConfusingVoidType: an async reconcile without a return statement means done()
export type ObjectResult = Result | undefined | void;

/**
 * An object-first reconcile: the primary object (present, and not being deleted unless a finalizer handles it) and its
 * context; resolves to what to do next, or rejects to go to the error policy.
 */
export type ObjectReconcileFunc<T extends KubeObject> = (obj: T, ctx: ObjectContext<T>) => Promise<ObjectResult>;

/** Clean-up of an object being deleted, behind a finalizer. */
export interface Finalize<T extends KubeObject> {
  /** The finalizer's name, e.g. `app.example.com/cleanup` (a domain-qualified name). */
  readonly name: string;
  /** Releases what the object holds outside the cluster; throw to retry. Runs at most once per successful cleanup. */
  readonly cleanup: ObjectReconcileFunc<T>;
}

/** Options of `objectReconciler`. */
export interface ObjectReconcilerOptions<T extends KubeObject> {
  /** Clean-up behind a finalizer for objects being deleted; without it a terminating object is not reconciled. */
  readonly finalize?: Finalize<T>;
  /** Called with the object and its context of each reconcile that reached it (for `.onError`). */
  readonly onObject?: (ctx: ReconcileContext, obj: T, octx: ObjectContext<T>) => void;
}

/** The request-based reconciler that reads the object of `kind` and runs `fn` on it (see the module comment). */
export function objectReconciler<T extends KubeObject>(
  kind: ResourceType<T, unknown>,
  fn: ObjectReconcileFunc<T>,
  options: ObjectReconcilerOptions<T> = {},
): Reconciler {
  return {
    async reconcile(req: Request, ctx: ReconcileContext): Promise<ObjectResult> {
      const obj = await ctx.cache.get(kind, req);
      if (!obj) return undefined;
      const run = (current: T, f: ObjectReconcileFunc<T>) => {
        const octx = objectContext(kind, current, ctx);
        options.onObject?.(ctx, current, octx);
        return f(current, octx);
      };
      const fin = options.finalize;
      if (fin) {
        return finalizer(
          ctx.client,
          kind,
          obj,
          fin.name,
          { apply: (o) => run(o, fn), cleanup: (o) => run(o, fin.cleanup) },
          { signal: ctx.signal },
        );
      }
      if (obj.metadata.deletionTimestamp) return undefined;
      return run(obj, fn);
    },
  };
}

/** The context of one reconcile of `obj` (see the module comment). */
export function objectContext<T extends KubeObject>(
  kind: ResourceType<T, unknown>,
  obj: T,
  ctx: ReconcileContext,
): ObjectContext<T> {
  const own = <C extends KubeObject>(r: ResourceType<C, unknown>, input: C, owned: boolean | undefined): C => {
    const copy = structuredClone(input);
    if (owned !== false) setControllerReference(kind, obj, copy, { objectType: r });
    else if (r.namespaced && !copy.metadata.namespace && obj.metadata.namespace) {
      copy.metadata.namespace = obj.metadata.namespace;
    }
    return copy;
  };
  // Expectations are recorded for kinds the cache follows (watched by for/owns/watches), in the form it follows them
  // (whole or metadata only): a write of another kind starts no informer (which would need list and watch on it) and
  // holds nothing back.
  const followed = (r: ResourceType<KubeObject, unknown>) =>
    ctx.cache.informers().find((i) => resourceId(i.resource) === resourceId(r));
  return {
    ...ctx,
    events: {
      normal: (reason, message) => ctx.recorder.event(kind, obj, 'Normal', reason, message),
      warning: (reason, message) => ctx.recorder.event(kind, obj, 'Warning', reason, message),
      about: (r, o, type, reason, message) => ctx.recorder.event(r, o, type, reason, message),
    },
    get: (r, ref) => ctx.cache.get(r, ref),
    list: (r, options) => ctx.cache.list(r, options),
    async owned(r, options = {}) {
      const uid = obj.metadata.uid;
      if (!uid) return [];
      const children = await ctx.cache.list(r, { index: { name: 'controller', value: uid } });
      return options.terminating ? children : children.filter((c) => !c.metadata.deletionTimestamp);
    },
    async create(r, input, options = {}) {
      const created = (await ctx.client.create(
        r,
        own(r, input as KubeObject, options.owned) as InputOf<typeof r>,
      )) as KubeObject;
      const informer = followed(r);
      if (informer) ctx.expect.created(informer.resource, created);
      return created as ObjectOf<typeof r>;
    },
    async apply(r, input, options = {}) {
      const desired = own(r, input as KubeObject, options.owned);
      const informer = followed(r);
      const existed = informer?.store.get(refKey(r, desired, obj)) !== undefined;
      const applied = await ctx.client.apply(r, desired, { fieldManager: ctx.fieldManager, force: true });
      if (informer && !existed) ctx.expect.created(informer.resource, applied);
      return applied as ObjectOf<typeof r>;
    },
    async delete(r, child) {
      try {
        await ctx.client.delete(r, refOf(child), { preconditions: { uid: child.metadata.uid ?? '' } });
      } catch (err) {
        if (isApiError(err, 'NotFound') || isApiError(err, 'Conflict')) return false;
        throw err;
      }
      const informer = followed(r);
      if (informer) ctx.expect.deleted(informer.resource, child);
      return true;
    },
    async status(status) {
      return (await updateStatusIfChanged(ctx.client, kind, obj, status)) !== undefined;
    },
  };
}

/** The cache key of `desired` (whose namespace may be left to the owner's). */
function refKey(r: ResourceType<KubeObject, unknown>, desired: KubeObject, owner: KubeObject): string {
  const namespace = r.namespaced ? (desired.metadata.namespace ?? owner.metadata.namespace) : undefined;
  const name = desired.metadata.name ?? '';
  return namespace ? `${namespace}/${name}` : name;
}
