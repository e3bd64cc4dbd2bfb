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
 * | `ctx.apply(kind, obj)` | — | set (unless `{ owned: false }`) | create, when the cache has no such object | yes | `Promise<T>`: the object as stored |
 * | `ctx.update(kind, obj)` | — | kept on a child it controls | — | yes | `Promise<T>`: the object as stored (Conflict when `obj`'s resourceVersion is stale) |
 * | `ctx.patch(kind, obj, mergePatch)` | — | kept on a child it controls | — | yes | `Promise<T>`: the object as stored |
 * | `ctx.delete(kind, obj, { propagationPolicy, gracePeriodSeconds, preconditions })` | — | — | delete | yes | `Promise<boolean>`: `true`, or `false` when it was already gone or replaced |
 * | `ctx.status(status)` | — | — | — | yes | `Promise<boolean>`: `true` when it wrote |
 * | `ctx.events.normal` / `.warning(reason, message)`, `.event(kind, obj, …)` | — | — | — | — | `void` (written in the background) |
 * | `ctx.rawClient.…` | API server | none | none | yes | as `Client` (`get` rejects with NotFound, `list` resolves to `{ items }`) |
 *
 * In detail:
 * - owner reference "set": this object becomes the controller owner of the copy written (and its namespace the
 *   object's when none is given; the copy gets the object's `opkit.dev/shard` label, when it has one and the copy
 *   none, so a sharded controller's children land in their owner's bucket; a `ctx.create` that meets a child this
 *   object already controls, in another bucket than its own — the owner was relabelled, or a full update dropped the
 *   child's label, so the owner's cache cannot see it — moves that child into the owner's bucket with a label patch
 *   and answers it, instead of failing with AlreadyExists forever); an owner reference the garbage collector would not honour (another namespace,
 *   another controller) fails the write with an `OwnerReferenceError` before any request is made. "Kept": when the
 *   child is controlled by this object (as `obj`, or the cache's copy of it, says), the update or patch cannot drop
 *   that reference, and one that would hand the child to another controller fails with `OwnerReferenceError`
 *   `AlreadyOwned` before any request (release a child through `claimChildren` or `ctx.rawClient`).
 * - expectation: the next reconcile of this request waits until the cache has seen the create or delete (or a
 *   timeout passes), so a cache that lags cannot make a duplicate or a double delete. Expectations are kept for the
 *   kinds the cache follows: those the controller watches, whole or metadata only.
 * - `ctx.update` replaces the object with `obj`'s `metadata.resourceVersion` as its precondition (one is required: a
 *   stale one fails with Conflict, which the default error policy retries with fresh state); `ctx.patch` sends an
 *   RFC 7386 JSON merge patch to `obj`'s namespace and name (put a `metadata.resourceVersion` in the patch for
 *   optimistic locking); `ctx.apply` is a server-side apply as the controller's field manager (forced);
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

import { isApiError } from '../client/errors.ts';
import {
  type InputOf,
  type Kind,
  type KubeObject,
  type ObjectOf,
  type ObjectRef,
  refOf,
  resourceId,
} from '../client/resource.ts';
import type { DeleteOptions, ListOptions } from '../client/types.ts';
import { UsageError } from '../errors.ts';
import type { EventOptions } from '../helpers/events.ts';
import { finalizer } from '../helpers/finalizers.ts';
import { controllerOf, OwnerReferenceError, setControllerReference } from '../helpers/ownerrefs.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import { type StatusOf, updateStatusIfChanged } from '../helpers/status.ts';
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
  /** Server-side apply of `obj` as the controller's field manager, controlled by this object (unless `owned: false`). */
  apply<R extends Kind<KubeObject, unknown>>(
    r: R,
    obj: InputOf<R>,
    options?: { readonly owned?: boolean },
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

type ChildWrites = Pick<ObjectContext<KubeObject>, 'create' | 'apply' | 'update' | 'patch' | 'delete'>;

/** The context's writes of children: owner references set or kept, expectations recorded (see the module comment). */
function childWrites<T extends KubeObject>(kind: Kind<T, unknown>, owner: T, ctx: ReconcileContext): ChildWrites {
  const c = ctx.rawClient;
  const own = ownership(kind, owner, ctx);
  return {
    async create(r, input, options = {}) {
      const desired = own.set(r, input, options.owned);
      let created: ObjectOf<typeof r>;
      try {
        created = await c.create(r, desired);
      } catch (err) {
        const moved = isApiError(err, 'AlreadyExists') ? await own.intoShard(r, desired) : undefined;
        if (moved === undefined) throw err;
        created = moved as ObjectOf<typeof r>; // the object of kind r, as read and patched
        ctx.log.info(
          { kind: r.kind, name: moved.metadata.name, shard: moved.metadata.labels?.[SHARD_LABEL] },
          "ctx.create: the child existed, ours but outside its owner's shard: moved it in",
        );
      }
      const informer = own.followed(r);
      if (informer) ctx.expect.created(informer.resource, created);
      return created;
    },
    async apply(r, input, options = {}) {
      const desired = own.set(r, input, options.owned);
      const informer = own.followed(r);
      const existed = informer?.store.get(refKey(r, desired, owner)) !== undefined;
      const applied = await c.apply(r, desired, { fieldManager: ctx.fieldManager, force: true });
      if (informer && !existed) ctx.expect.created(informer.resource, applied);
      return applied as ObjectOf<typeof r>;
    },
    async update(r, child) {
      if (!child.metadata.resourceVersion) {
        throw new UsageError(
          'InvalidArgument',
          `ctx.update(${r.kind}) needs the object's metadata.resourceVersion, its precondition: update an object as read (ctx.cache, ctx.apiReader), or write with ctx.apply`,
        );
      }
      return c.update(r, own.keep(r, child));
    },
    async patch(r, child, patch) {
      return c.patch(r, own.refOf(r, child), own.keepInPatch(r, child, patch));
    },
    async delete(r, child, options) {
      const sent = childDeleteOptions(r, child, options);
      try {
        await c.delete(r, refOf(child), sent);
      } catch (err) {
        if (isApiError(err, 'NotFound') || isApiError(err, 'Conflict')) return false;
        throw err;
      }
      const informer = own.followed(r);
      const uid = sent.preconditions.uid;
      if (informer) ctx.expect.deleted(informer.resource, { ...child, metadata: { ...child.metadata, uid } });
      return true;
    },
  };
}

/**
 * @internal What `ctx.delete` sends for `child`: `options` with `Background` propagation unless they name a policy, and the
 * child's uid as a precondition (with theirs, when they give one). Throws `UsageError` `InvalidArgument` for a
 * `preconditions.uid` other than the child's, or when neither gives a uid.
 */
export function childDeleteOptions(
  r: Kind<KubeObject, unknown>,
  child: KubeObject,
  options: ChildDeleteOptions = {},
): DeleteOptions & { preconditions: { uid: string } } {
  const name = `${r.kind} ${child.metadata.namespace ? `${child.metadata.namespace}/` : ''}${child.metadata.name}`;
  const own = child.metadata.uid;
  const given = options.preconditions?.uid;
  if (own !== undefined && given !== undefined && given !== own) {
    throw new UsageError(
      'InvalidArgument',
      `ctx.delete(${name}) was given the uid precondition ${given}, but the object's uid is ${own}: ctx.delete deletes ` +
        `the object it is given, never another of the same name; pass that object (as read from ctx.owned or ctx.cache)`,
    );
  }
  const uid = own ?? given;
  if (uid === undefined) {
    throw new UsageError(
      'InvalidArgument',
      `ctx.delete(${name}) needs the object's metadata.uid, its precondition: delete an object as read (ctx.owned, ` +
        `ctx.cache, ctx.apiReader), or give preconditions.uid`,
    );
  }
  return {
    ...options,
    propagationPolicy: options.propagationPolicy ?? 'Background',
    preconditions: { ...options.preconditions, uid },
  };
}

/** How the writes of one reconcile of `owner` treat owner references, and which kinds the cache follows. */
function ownership<T extends KubeObject>(kind: Kind<T, unknown>, owner: T, ctx: ReconcileContext) {
  const uid = owner.metadata.uid;
  const c = ctx.rawClient;
  // Expectations are recorded for kinds the cache follows (watched by for/owns/watches), in the form it follows them
  // (whole or metadata only): a write of another kind starts no informer (which would need list and watch on it) and
  // holds nothing back.
  const followed = (r: Kind<KubeObject, unknown>) =>
    ctx.cache.informers().find((i) => resourceId(i.resource) === resourceId(r));
  /** `child`, in the owner's namespace when it names none (namespaced kinds). */
  const inNamespace = <C extends KubeObject>(r: Kind<KubeObject, unknown>, child: C): C => {
    if (r.namespaced && !child.metadata.namespace && owner.metadata.namespace) {
      child.metadata.namespace = owner.metadata.namespace;
    }
    return child;
  };
  const namespaced = <C extends KubeObject>(r: Kind<KubeObject, unknown>, child: C): C =>
    inNamespace(r, structuredClone(child));
  /** Whether `child` (or the cache's copy of it) is controlled by the owner. */
  const controls = (r: Kind<KubeObject, unknown>, child: KubeObject): boolean => {
    const cached = followed(r)?.store.get(refKey(r, child, owner));
    return uid !== undefined && [child, cached].some((o) => o !== undefined && controllerOf(o)?.uid === uid);
  };
  /** The owner's shard label (sharding), which the children it controls carry too, so they land in its bucket. */
  const shard = owner.metadata.labels?.[SHARD_LABEL];
  const control = <C extends KubeObject>(r: Kind<KubeObject, unknown>, child: C): C => {
    const controlled = setControllerReference(kind, owner, child, { objectType: r });
    if (shard !== undefined && controlled.metadata.labels?.[SHARD_LABEL] === undefined)
      controlled.metadata.labels = { ...controlled.metadata.labels, [SHARD_LABEL]: shard };
    return controlled;
  };
  /** Refuses a write that would hand a child the owner controls to another controller (`other`'s uid). */
  const refuseHandOver = (r: Kind<KubeObject, unknown>, child: KubeObject, other: unknown): void => {
    const name = `${r.kind} ${child.metadata.namespace ? `${child.metadata.namespace}/` : ''}${child.metadata.name}`;
    throw new OwnerReferenceError(
      'AlreadyOwned',
      `this write would make ${String(other)} the controller of ${name}, which ${owner.metadata.name} controls: ` +
        `a write through ctx keeps the controller reference; release the child first (claimChildren), or write it ` +
        `with ctx.rawClient`,
    );
  };
  return {
    followed,
    /**
     * `desired` exists already: when the owner is sharded and the existing object is one it controls whose shard label
     * is not the owner's, that label is patched to the owner's (checked against the resourceVersion read) and the
     * object answered; otherwise undefined.
     */
    async intoShard<C extends KubeObject>(r: Kind<C, unknown>, desired: KubeObject): Promise<C | undefined> {
      if (shard === undefined || uid === undefined || !desired.metadata.name) return undefined;
      const ref = refOf(desired);
      const existing = await c.getIfExists(r, ref);
      if (!existing || controllerOf(existing)?.uid !== uid || existing.metadata.labels?.[SHARD_LABEL] === shard)
        return undefined;
      const patch = {
        metadata: { resourceVersion: existing.metadata.resourceVersion, labels: { [SHARD_LABEL]: shard } },
      };
      return c.patch(r, ref, patch);
    },
    /** A copy of `input` controlled by the owner (unless `owned` is false), in its namespace when it names none. */
    set<I>(r: Kind<KubeObject, unknown>, input: I, owned: boolean | undefined): I {
      const copy = structuredClone(input);
      if (!isKubeObject(copy)) throw new UsageError('InvalidArgument', `a ${r.kind} to write needs its metadata`);
      if (owned === false) inNamespace(r, copy);
      else control(r, copy);
      return copy;
    },
    /** A copy of `child` (in the owner's namespace when it names none) that keeps the owner's controller reference. */
    keep<C extends KubeObject>(r: Kind<KubeObject, unknown>, child: C): C {
      const copy = namespaced(r, child);
      if (!controls(r, child)) return copy;
      const other = controllerOf(child);
      if (other !== undefined && other.uid !== uid) refuseHandOver(r, child, other.uid);
      return control(r, copy);
    },
    /** The namespace and name `child` is written at. */
    refOf: (r: Kind<KubeObject, unknown>, child: KubeObject): ObjectRef => refOf(namespaced(r, child)),
    /** `patch`, its `ownerReferences` (when it sets them, on a child the owner controls) keeping the owner's. */
    keepInPatch(r: Kind<KubeObject, unknown>, child: KubeObject, patch: unknown): unknown {
      if (!isRecord(patch) || !isRecord(patch.metadata) || !('ownerReferences' in patch.metadata)) return patch;
      if (!controls(r, child)) return patch;
      const ours = controllerOf(control(r, namespaced(r, child)));
      const given = Array.isArray(patch.metadata.ownerReferences) ? patch.metadata.ownerReferences : [];
      const others = given.filter((o) => !(isRecord(o) && o.uid === uid));
      const other = others.find((o) => isRecord(o) && o.controller === true);
      if (isRecord(other)) refuseHandOver(r, child, other.uid);
      return { ...patch, metadata: { ...patch.metadata, ownerReferences: [...others, ours] } };
    },
  };
}

/** The cache key of `desired` (whose namespace may be left to the owner's). */
function refKey(r: Kind<KubeObject, unknown>, desired: KubeObject, owner: KubeObject): string {
  const namespace = r.namespaced ? (desired.metadata.namespace ?? owner.metadata.namespace) : undefined;
  const name = desired.metadata.name ?? '';
  return namespace ? `${namespace}/${name}` : name;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isKubeObject(v: unknown): v is KubeObject {
  return isRecord(v) && isRecord(v.metadata);
}
