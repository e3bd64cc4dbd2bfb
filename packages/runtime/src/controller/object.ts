/**
 * @module controller/object
 * The object-first reconciler, as controller-runtime's `ObjectReconciler` over its request-based `Reconciler`:
 * `reconcile(obj, ctx)` gets the primary object itself — read from the cache, present, not being deleted — and a
 * context that does the bookkeeping a reconciler would otherwise forget. `objectReconciler` adapts it to the
 * request-based contract below (`Reconciler`), which stays usable alone.
 *
 * The context (`ObjectContext`) has one write surface: every write a reconciler makes goes through `ctx` and carries
 * the owner reference and the expectation where they apply. Reads say where they come from. Raw access stays
 * possible, under a name that says so.
 *
 * | call | reads from | owner reference | expectation | signal | answers |
 * | --- | --- | --- | --- | --- | --- |
 * | `ctx.cache.get(kind, ref)` | cache | — | — | — | `Promise<T \| undefined>`: the object, or `undefined` |
 * | `ctx.cache.list(kind, { namespace, labelSelector, index })` | cache | — | — | — | `Promise<T[]>` |
 * | `ctx.owned(kind)` | cache (`controller` index) | — | — | — | `Promise<T[]>`: its children (see below) |
 * | `ctx.apiReader.get(kind, ref)` | API server | — | — | yes | `Promise<T \| undefined>`: the object, or `undefined` |
 * | `ctx.apiReader.list(kind, { namespace, labelSelector, fieldSelector })` | API server | — | — | yes | `Promise<T[]>` |
 * | `ctx.create(kind, obj)` | — | set (unless `{ owned: false }`) | create | yes | `Promise<T>`: the object as stored |
 * | `ctx.apply(kind, obj)` | — | set (unless `{ owned: false }`) | create, when the cache has no such object; else write | yes | `Promise<T>`: the object as stored |
 * | `ctx.update(kind, obj)` | — | kept on a child it controls | write | yes | `Promise<T>`: the object as stored (Conflict when `obj`'s resourceVersion is stale) |
 * | `ctx.patch(kind, obj, mergePatch)` | — | kept on a child it controls | write | yes | `Promise<T>`: the object as stored |
 * | `ctx.delete(kind, obj, { propagationPolicy, gracePeriodSeconds, preconditions })` | — | — | delete | yes | `Promise<boolean>`: `true`, or `false` when it was already gone or replaced |
 * | `ctx.status(status)` | — | — | — | yes | `Promise<boolean>`: `true` when it wrote |
 * | `ctx.events.normal` / `.warning(reason, message)`, `.event(kind, obj, …)` | — | — | — | — | `void` (written in the background) |
 * | `ctx.rawClient.…` | API server | none | none | yes | as `Client` (`get` rejects with NotFound, `list` resolves to `{ items }`) |
 *
 * In detail:
 * - owner reference "set": this object becomes the controller owner of the copy written (and its namespace the
 *   object's when none is given; the copy gets the object's `opkit.dev/shard` label, when it has one and the copy
 *   none, so a sharded controller's children land in their owner's shard; a `ctx.create` that meets a child this
 *   object already controls, in another shard than its own — the owner was relabelled, or a full update dropped the
 *   child's label, so the owner's cache cannot see it — moves that child into the owner's shard with a label patch
 *   and answers it, instead of failing with AlreadyExists forever); an owner reference the garbage collector would not honour (another namespace,
 *   another controller) fails the write with an `OwnerReferenceError` before any request is made. "Kept": when the
 *   child is controlled by this object (as `obj`, or the cache's copy of it, says), the update or patch cannot drop
 *   that reference, and one that would hand the child to another controller fails with `OwnerReferenceError`
 *   `AlreadyOwned` before any request (release a child through `claimChildren` or `ctx.rawClient`).
 * - expectation: the next reconcile of this request waits until the cache has seen the create or delete (or a
 *   timeout passes), so a cache that lags cannot make a duplicate or a double delete. Expectations are kept for the
 *   kinds the cache follows: those the controller watches, whole or metadata only. A `ctx.create` that got no answer
 *   (`Network`, `Timeout`, `ServerTimeout`, `InternalError`: the apiserver may have stored it) is looked for before
 *   the next reconcile: the kind is listed from the apiserver, and an object the cache lacks with its name (or, for a
 *   `generateName`, this controller) is waited for as a create, so a lost answer cannot make a second child either.
 * - `ctx.update` replaces the object with `obj`'s `metadata.resourceVersion` as its precondition (one is required: a
 *   stale one fails with Conflict, which the default error policy retries with fresh state); `ctx.patch` sends an
 *   RFC 7386 JSON merge patch to `obj`'s namespace and name (put a `metadata.resourceVersion` in the patch for
 *   optimistic locking); `ctx.apply` is a server-side apply as the controller's field manager (forced unless
 *   `force: false`);
 *   `ctx.delete` deletes with a uid precondition (never a successor with the same name) and, unless told otherwise,
 *   `propagationPolicy: 'Background'`, as kubectl does: the garbage collector then deletes the child's own dependents
 *   (a batch/v1 Job's pods, which the apiserver would orphan by default, as a v1 ReplicationController's). An
 *   explicit policy also overrides an `orphan` or `foregroundDeletion` finalizer the child carries. Its other
 *   options go to the apiserver as given; a `preconditions.uid` other than the child's fails with `UsageError`
 *   `InvalidArgument` before any request (it would name another object than the one whose delete is expected), and
 *   a child without a uid needs one there.
 * - `ctx.status(status)`: `updateStatusIfChanged` (helpers/status.ts) on the object: writes the status subresource
 *   only when it differs from what the server has (the object's status, or the one this process wrote from it), by a
 *   merge patch that also removes the fields the new status no longer has, at any depth.
 * - signal: the request aborts when the reconcile's signal does (a drain cuts a hung request short).
 * - `ctx.owned(kind)`: the objects of `kind` this object controls (the built-in `controller` index), not counting
 *   those being deleted unless `{ terminating: true }`; `ctx.owned(metadataOnly(kind))` reads them from a
 *   metadata-only informer.
 *
 * Objects being deleted go to the `finalize` handler when one is given: its finalizer is added before `reconcile`
 * first runs, and removed once `cleanup` succeeded (see helpers/finalizers.ts). Without one, a terminating object is
 * not reconciled (owner references let the garbage collector remove its children).
 *
 * Guarantees: `reconcile` never sees a missing object or, without a finalizer, one being deleted. Writes through
 * `ctx` never change the objects passed in (they are copied before the owner reference is set).
 */

import type { InputOf, Kind, KubeObject, ObjectOf, ObjectRef } from '../client/resource.ts';
import type { DeleteOptions, ListOptions } from '../client/types.ts';
import type { EventOptions } from '../helpers/events.ts';
import { finalizer } from '../helpers/finalizers.ts';
import { type StatusOf, updateStatusIfChanged } from '../helpers/status.ts';
import { childWrites } from './children.ts';
import type { ReconcileContext, ReconcileEvents, ReconcileRequest, Reconciler, Result } from './reconcile.ts';

export type { StatusOf } from '../helpers/status.ts';

/** Events about the object being reconciled, and (`event`, as the controller's recorder) about any other. */
export interface ObjectEvents extends ReconcileEvents {
  /** A `Normal` Event about the object: `reason` in UpperCamelCase (`Created`), `message` for people. */
  normal(reason: string, message: string, options?: EventOptions): void;
  /** A `Warning` Event about the object: something an operator of the cluster should look at. */
  warning(reason: string, message: string, options?: EventOptions): void;
}

/** What `ctx.apiReader.list` selects: `ListOptions` without the signal (the reconcile's is used). */
export type ApiListOptions = Omit<ListOptions, 'signal'>;

/**
 * How `ctx.delete` deletes: `DeleteOptions` without the signal (the reconcile's is used). `propagationPolicy`
 * defaults to `Background`; `preconditions` are sent with the child's uid (a different `uid` is refused).
 */
export type ChildDeleteOptions = Omit<DeleteOptions, 'signal'>;

/**
 * Live reads from the API server (controller-runtime's `APIReader`), bound to the reconcile's signal, in the shapes
 * of the cache's reads: `get` answers `undefined` for a missing object, `list` the items. For what the cache cannot
 * answer yet (an object this reconcile must see as the server has it, a kind the cache does not follow).
 */
export interface ApiReader {
  /** The object as the API server has it, or `undefined` when there is none. */
  get<C extends KubeObject>(r: Kind<C>, ref: ObjectRef): Promise<C | undefined>;
  /** The objects the API server lists (every page), by namespace, label selector or field selector. */
  list<C extends KubeObject>(r: Kind<C>, options?: ApiListOptions): Promise<C[]>;
}

/**
 * An RFC 7386 JSON merge patch of a `T`: any subset of its fields, at any depth; `null` removes a field; an array is
 * replaced whole.
 */
export type MergePatch<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: MergePatch<NonNullable<T[K]>> | null }
    : T;

/**
 * What an object-first reconcile gets besides the object: reads that say where they come from (`ctx.cache`,
 * `ctx.owned`, `ctx.apiReader`), one write surface that does the bookkeeping (owner references, expectations, the
 * reconcile's signal, status only on change), Events about the object, and the request's logger and signal. See the
 * module comment for the table of what each call guarantees.
 *
 * @showModuleComment
 */
export interface ObjectContext<T extends KubeObject> extends ReconcileContext {
  /** Events about this object (aggregated and rate limited as client-go's recorder), or about another. */
  readonly events: ObjectEvents;
  /** Live reads from the API server, bound to the reconcile's signal; same shapes as `ctx.cache`'s reads. */
  readonly apiReader: ApiReader;
  /** The objects of `r` this object controls (cache); those being deleted only with `{ terminating: true }`. */
  owned<C extends KubeObject>(r: Kind<C>, options?: { readonly terminating?: boolean }): Promise<C[]>;
  /** Creates `obj` controlled by this object (unless `{ owned: false }`), expecting its create. */
  create<R extends Kind<KubeObject, unknown>>(
    r: R,
    obj: InputOf<R>,
    options?: { readonly owned?: boolean },
  ): Promise<ObjectOf<R>>;
  /**
   * Server-side apply of `obj` as the controller's field manager, controlled by this object (unless `owned: false`);
   * forced by default (the controller takes the fields it sets), or with `force: false` a field another manager owns
   * is a Conflict naming it, not a takeover.
   */
  apply<R extends Kind<KubeObject, unknown>>(
    r: R,
    obj: InputOf<R>,
    options?: { readonly owned?: boolean; readonly force?: boolean },
  ): Promise<ObjectOf<R>>;
  /**
   * Replaces `obj` (its `metadata.resourceVersion` is the precondition: Conflict when stale), keeping this object's
   * controller reference on a child it controls.
   */
  update<C extends KubeObject>(r: Kind<C>, obj: C): Promise<C>;
  /**
   * A JSON merge patch of `obj` (its namespace and name), keeping this object's controller reference on a child it
   * controls.
   */
  patch<C extends KubeObject>(r: Kind<C>, obj: C, mergePatch: MergePatch<C>): Promise<C>;
  /**
   * Deletes `obj` (uid precondition; `Background` propagation unless `options` say otherwise), expecting its delete;
   * false when it was already gone or replaced.
   */
  delete<C extends KubeObject>(r: Kind<C>, obj: C, options?: ChildDeleteOptions): Promise<boolean>;
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
  kind: Kind<T, unknown>,
  fn: ObjectReconcileFunc<T>,
  options: ObjectReconcilerOptions<T> = {},
): Reconciler {
  return {
    async reconcile(req: ReconcileRequest, ctx: ReconcileContext): Promise<ObjectResult> {
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
          ctx.rawClient,
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
  kind: Kind<T, unknown>,
  obj: T,
  ctx: ReconcileContext,
): ObjectContext<T> {
  const c = ctx.rawClient;
  return {
    ...ctx,
    events: {
      event: (r, o, type, reason, message, options) => ctx.events.event(r, o, type, reason, message, options),
      normal: (reason, message, options) => ctx.events.event(kind, obj, 'Normal', reason, message, options),
      warning: (reason, message, options) => ctx.events.event(kind, obj, 'Warning', reason, message, options),
    },
    apiReader: {
      get: (r, ref) => c.getIfExists(r, ref),
      list: async (r, options = {}) => (await c.list(r, options)).items,
    },
    async owned(r, options = {}) {
      const uid = obj.metadata.uid;
      if (!uid) return [];
      const children = await ctx.cache.list(r, { index: { name: 'controller', value: uid } });
      return options.terminating ? children : children.filter((child) => !child.metadata.deletionTimestamp);
    },
    ...childWrites(kind, obj, ctx),
    async status(status) {
      return (await updateStatusIfChanged(c, kind, obj, status)) !== undefined;
    },
  };
}
