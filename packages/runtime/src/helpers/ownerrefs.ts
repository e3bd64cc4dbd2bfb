/**
 * @module helpers/ownerrefs
 * Owner references: make an owner the controller (or a plain owner) of an object so the garbage collector deletes the
 * object with its owner, and query or remove such references.
 * Guarantees: a reference is identified by the owner's uid, so setting it again is idempotent (the entry is updated
 * in place, never duplicated); an object has at most one controller; the scope rules of the garbage collector are
 * checked before anything is changed, so a failed call leaves the object untouched:
 * - the owner must have a `metadata.uid` (read it from the API first) — `MissingUid`;
 * - a namespaced owner and its object share one namespace — `CrossNamespace`;
 * - a cluster-scoped object cannot have a namespaced owner — `ClusterScopedOwnedByNamespaced` (checked only when the
 *   caller passes `objectType`: from the object alone, a cluster-scoped object cannot be told from a namespaced one
 *   whose namespace is left to a default);
 * - a cluster-scoped owner may own objects in any namespace.
 * An object without `metadata.namespace` and a namespaced owner is taken to be created in the owner's namespace: its
 * `metadata.namespace` is set to the owner's (unless `objectType` says it is cluster-scoped).
 */

import type { Kind, KubeObject, ObjectMeta, OwnerReference } from '../client/resource.ts';
import { OpkitError, UsageError } from '../errors.ts';

/** Why an owner reference cannot be set. A reference to an owner of the wrong type, or without a name or namespace, is
 * a `UsageError` (`InvalidArgument`). */
export type OwnerReferenceErrorCode =
  /** The object already has another controller: an object has at most one; release it first, or set a plain owner. */
  | 'AlreadyOwned'
  /** A namespaced owner and its object are in different namespaces: the garbage collector would delete the object. */
  | 'CrossNamespace'
  /** A cluster-scoped object cannot have a namespaced owner (the garbage collector would never delete it). */
  | 'ClusterScopedOwnedByNamespaced'
  /** The owner has no `metadata.uid`: it was not read from the API; read it first. */
  | 'MissingUid';

/** An owner reference that the API or its garbage collector would not honour. */
export class OwnerReferenceError extends OpkitError<OwnerReferenceErrorCode> {
  override readonly name = 'OwnerReferenceError';
}

export interface OwnerReferenceOptions {
  /**
   * The resource type of the owned object. Lets the scope check reject a cluster-scoped object with a namespaced owner
   * (`ClusterScopedOwnedByNamespaced`) instead of giving it the owner's namespace.
   */
  readonly objectType?: Kind;
}

/** `Kind namespace/name`, for messages. */
function describe(kind: string | undefined, meta: ObjectMeta): string {
  const name = meta.name ?? (meta.generateName ? `${meta.generateName}*` : '<unnamed>');
  return `${kind ?? 'object'} ${meta.namespace ? `${meta.namespace}/${name}` : name}`;
}

/**
 * Checks everything that can fail and builds the reference, without changing `obj`. Returns the reference and the
 * namespace `obj` must be given (undefined: leave it as it is).
 */
function prepare(
  ownerType: Kind,
  owner: KubeObject,
  obj: KubeObject,
  objectType: Kind | undefined,
): { ref: OwnerReference; namespace: string | undefined } {
  const ownerName = describe(ownerType.kind, owner.metadata);
  const objName = describe(objectType?.kind ?? obj.kind, obj.metadata);
  if (owner.kind !== undefined && owner.kind !== ownerType.kind) {
    throw new UsageError(
      'InvalidArgument',
      `owner ${ownerName} is a ${owner.kind}, not a ${ownerType.kind}: pass its own resource type`,
    );
  }
  const uid = owner.metadata.uid;
  if (!uid) {
    throw new OwnerReferenceError(
      'MissingUid',
      `cannot make ${ownerName} an owner of ${objName}: the owner has no metadata.uid — the owner must be read from the API first`,
    );
  }
  const name = owner.metadata.name;
  if (!name)
    throw new UsageError(
      'InvalidArgument',
      `cannot make ${ownerName} an owner of ${objName}: the owner has no metadata.name`,
    );
  let namespace: string | undefined;
  if (ownerType.namespaced) {
    const ownerNs = owner.metadata.namespace;
    if (!ownerNs) {
      throw new UsageError(
        'InvalidArgument',
        `${ownerType.kind} is namespaced, but owner ${ownerName} has no metadata.namespace`,
      );
    }
    if (objectType !== undefined && !objectType.namespaced) {
      throw new OwnerReferenceError(
        'ClusterScopedOwnedByNamespaced',
        `cannot make ${ownerName} an owner of ${objName}: a cluster-scoped object cannot have a namespaced owner ` +
          '(the garbage collector reports the reference as invalid and never deletes the object)',
      );
    }
    const objNs = obj.metadata.namespace;
    if (!objNs) {
      namespace = ownerNs;
    } else if (objNs !== ownerNs) {
      throw new OwnerReferenceError(
        'CrossNamespace',
        `cannot make ${ownerName} an owner of ${objName}: owner references cannot cross namespaces (the garbage ` +
          `collector would look for the owner in namespace ${objNs}, not find it, and delete the object)`,
      );
    }
  }
  return { ref: { apiVersion: ownerType.apiVersion, kind: ownerType.kind, name, uid }, namespace };
}

/** Puts `ref` in place of the entry with its uid (dropping duplicates of that uid), or appends it. */
function upsert(obj: KubeObject, ref: OwnerReference, namespace: string | undefined): void {
  const refs = obj.metadata.ownerReferences ?? [];
  const next: OwnerReference[] = [];
  let placed = false;
  for (const r of refs) {
    if (r.uid !== ref.uid) {
      next.push(r);
    } else if (!placed) {
      next.push(ref);
      placed = true;
    }
  }
  if (!placed) next.push(ref);
  obj.metadata.ownerReferences = next;
  if (namespace !== undefined) obj.metadata.namespace = namespace;
}

/**
 * Makes `owner` the controller of `obj`: a reference with apiVersion and kind from `ownerType`, the owner's name and
 * uid, `controller: true` and `blockOwnerDeletion: true`. Mutates `obj.metadata` (a new `ownerReferences` array and,
 * for a namespaced owner and an object without a namespace, `namespace`) and returns `obj`.
 * Idempotent: a reference to the same uid (controller or not) is updated in place. A controller reference to a
 * different uid is an `OwnerReferenceError` `AlreadyOwned`; the scope rules are in the module documentation.
 */
export function setControllerReference<O extends KubeObject, T extends KubeObject>(
  ownerType: Kind<O>,
  owner: O,
  obj: T,
  options: OwnerReferenceOptions = {},
): T {
  const { ref, namespace } = prepare(ownerType, owner, obj, options.objectType);
  const other = obj.metadata.ownerReferences?.find((r) => r.controller === true && r.uid !== ref.uid);
  if (other !== undefined) {
    throw new OwnerReferenceError(
      'AlreadyOwned',
      `cannot make ${describe(ownerType.kind, owner.metadata)} the controller of ` +
        `${describe(options.objectType?.kind ?? obj.kind, obj.metadata)}: it is already controlled by ` +
        `${other.kind}/${other.name} (uid ${other.uid})`,
    );
  }
  upsert(obj, { ...ref, controller: true, blockOwnerDeletion: true }, namespace);
  return obj;
}

/**
 * Makes `owner` a (non-controller) owner of `obj`: no `controller` field, `blockOwnerDeletion` false unless requested.
 * Replaces an existing reference with the same uid — including a controller reference, which thereby stops being
 * one. Mutates `obj.metadata` like `setControllerReference` and returns `obj`; same scope rules.
 */
export function setOwnerReference<O extends KubeObject, T extends KubeObject>(
  ownerType: Kind<O>,
  owner: O,
  obj: T,
  options: OwnerReferenceOptions & { readonly blockOwnerDeletion?: boolean } = {},
): T {
  const { ref, namespace } = prepare(ownerType, owner, obj, options.objectType);
  upsert(obj, { ...ref, blockOwnerDeletion: options.blockOwnerDeletion ?? false }, namespace);
  return obj;
}

/** The controller reference of `obj` (the one with `controller: true`), if any. */
export function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata.ownerReferences?.find((r) => r.controller === true);
}

/** True when `obj`'s controller reference points at `owner` (compared by uid; false when `owner` has no uid). */
export function isControlledBy(obj: KubeObject, owner: KubeObject): boolean {
  const uid = owner.metadata.uid;
  return !!uid && controllerOf(obj)?.uid === uid;
}

/**
 * Removes every reference to `owner` (by uid) from `obj`, mutating `obj.metadata.ownerReferences` (deleted when it
 * becomes empty). Returns whether a reference was removed.
 */
export function removeOwnerReference(obj: KubeObject, owner: KubeObject): boolean {
  const uid = owner.metadata.uid;
  const refs = obj.metadata.ownerReferences;
  if (!uid || refs === undefined) return false;
  const kept = refs.filter((r) => r.uid !== uid);
  if (kept.length === refs.length) return false;
  if (kept.length === 0) delete obj.metadata.ownerReferences;
  else obj.metadata.ownerReferences = kept;
  return true;
}
