/**
 * @module controller/children
 * The writes of an object-first reconcile's context on the object's children (`ctx.create`, `apply`, `update`,
 * `patch`, `delete`), with the owner references, shard labels and expectations their guarantees need (the table and
 * contracts are object.ts's module comment).
 */
import { isApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, type ObjectOf, type ObjectRef, refOf, resourceId } from '../client/resource.ts';
import type { DeleteOptions } from '../client/types.ts';
import { UsageError } from '../errors.ts';
import { controllerOf, OwnerReferenceError, setControllerReference } from '../helpers/ownerrefs.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import type { ChildDeleteOptions, ObjectContext } from './object.ts';
import type { ReconcileContext } from './reconcile.ts';

type ChildWrites = Pick<ObjectContext<KubeObject>, 'create' | 'apply' | 'update' | 'patch' | 'delete'>;

/** The context's writes of children: owner references set or kept, expectations recorded (see the module comment). */
export function childWrites<T extends KubeObject>(
  kind: Kind<T, unknown>,
  owner: T,
  ctx: ReconcileContext,
): ChildWrites {
  const c = ctx.rawClient;
  const own = ownership(kind, owner, ctx);
  /** `obj`, as the API answered a write of it, declared written when the cache follows its kind. */
  const written = <C extends KubeObject>(r: Kind<C>, obj: C): C => {
    const informer = own.followed(r);
    if (informer) ctx.expect.written(informer.resource, obj);
    return obj;
  };
  return {
    async create(r, input, options = {}) {
      const desired = own.set(r, input, options.owned);
      let created: ObjectOf<typeof r>;
      try {
        created = await c.create(r, desired);
      } catch (err) {
        const informer = answerLost(err) ? own.followed(r) : undefined;
        if (informer) ctx.expect.maybeCreated(informer.resource, desired); // the apiserver may have stored it
        const moved = isApiError(err, 'AlreadyExists') ? await own.intoShard(r, desired) : undefined;
        if (moved === undefined) throw err;
        created = moved as ObjectOf<typeof r>; // the object of kind r, as read and patched
        ctx.log.info(
          { kind: r.kind, name: moved.metadata.name, shard: moved.metadata.labels?.[SHARD_LABEL] },
          "ctx.create: the child existed, ours but outside its owner's shard: moved it in",
        );
      }
      const informer = own.followed(r);
      // a child the cache can never hold (another namespace, outside its selector) is not waited for
      if (informer?.mayHold(created)) ctx.expect.created(informer.resource, created);
      return created;
    },
    async apply(r, input, options = {}) {
      const desired = own.set(r, input, options.owned);
      const informer = own.followed(r);
      const existed = informer?.store.get(refKey(r, desired, owner)) !== undefined;
      const applied = await c.apply(r, desired, { fieldManager: ctx.fieldManager, force: options.force ?? true });
      if (informer && existed) ctx.expect.written(informer.resource, applied);
      else if (informer?.mayHold(applied)) ctx.expect.created(informer.resource, applied);
      return applied as ObjectOf<typeof r>;
    },
    async update(r, child) {
      if (!child.metadata.resourceVersion) {
        throw new UsageError(
          'InvalidArgument',
          `ctx.update(${r.kind}) needs the object's metadata.resourceVersion, its precondition: update an object as read (ctx.cache, ctx.apiReader), or write with ctx.apply`,
        );
      }
      return written(r, await c.update(r, own.keep(r, child)));
    },
    async patch(r, child, patch) {
      return written(r, await c.patch(r, own.refOf(r, child), own.keepInPatch(r, child, patch)));
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
 * Whether a write that failed with `err` may have happened all the same: no answer came (the connection broke, the
 * client's deadline passed, a signal cut it off), or the apiserver said it could not tell (a server timeout, an
 * internal error).
 */
function answerLost(err: unknown): boolean {
  // Aborted too: a reconcile's deadline, or the drain, may cut a create off after it was sent
  return isApiError(err) && ['Network', 'Timeout', 'ServerTimeout', 'InternalError', 'Aborted'].includes(err.code);
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
  /** The owner's shard label value (sharding), which the children it controls carry, so they land in its shard. */
  const shard = ctx.shardLabels[SHARD_LABEL];
  const control = <C extends KubeObject>(r: Kind<KubeObject, unknown>, child: C): C => {
    const controlled = setControllerReference(kind, owner, child, { objectType: r });
    // the shard's label, whatever the child was given (a label copied from an owner under another filter, say)
    if (shard !== undefined && controlled.metadata.labels?.[SHARD_LABEL] !== shard)
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
