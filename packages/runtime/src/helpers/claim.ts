/**
 * @module helpers/claim
 * `claimChildren`: which of the candidate children an owner controls, adopting and releasing on the way — the
 * semantics of Kubernetes' `ClaimPods` (controller_ref_manager.go):
 * - a child controlled by the owner (same uid) that matches its selector is claimed;
 * - a child controlled by the owner that no longer matches is released (its reference to the owner removed), unless
 *   the owner is being deleted;
 * - an orphan (no controller) that matches, is not terminating, while the owner is not being deleted, is adopted: the
 *   owner becomes its controller — but only after a fresh read of the owner from the apiserver (not the cache) shows
 *   the same uid, not being deleted, so an owner that was just deleted or re-created cannot adopt;
 * - a child controlled by another owner, or in another namespace than a namespaced owner, is left alone.
 *
 * Guarantees: each adoption and release is a JSON merge patch that carries the child's resourceVersion, so a child
 * changed since it was read is never overwritten: on a Conflict the child is read again from the apiserver and judged
 * once more (a stale cache that still shows an adopted child as an orphan costs one GET, not an error); a child that
 * is gone (NotFound) is skipped. Every other failure is collected and thrown once all candidates were handled, as a `ClaimError` (its
 * `cause` holds the errors); the owner re-read is done at most once per call. Needs `get` on the owner's kind and
 * `patch` on the children's kind.
 */

import type { Client } from '../client/client.ts';
import { isConflict, isNotFound } from '../client/errors.ts';
import { type KubeObject, type ResourceType, refOf } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';
import { controllerOf, removeOwnerReference, setControllerReference } from './ownerrefs.ts';

/**
 * `OwnerChanged`: the owner's fresh read shows another uid or a deletion, so it adopts nothing; `ClaimFailed`: some
 * adoptions or releases failed.
 */
export type ClaimErrorCode = 'OwnerChanged' | 'ClaimFailed';

/** Adopting or releasing failed (`ClaimFailed`, the errors in `cause`), or the owner is not the one the cache showed. */
export class ClaimError extends OpkitError<ClaimErrorCode> {
  override readonly name = 'ClaimError';
}

/** What `claimChildren` judges: the owner, its candidate children, and how to tell that a child belongs to it. */
export interface ClaimOptions<O extends KubeObject, C extends KubeObject> {
  /** The client the fresh read of the owner and the patches of the children go through. */
  readonly client: Client;
  /** The owner's kind. */
  readonly ownerType: ResourceType<O>;
  /** The owner as read (from the cache): it needs `metadata.uid`. */
  readonly owner: O;
  /** The children's kind. */
  readonly childType: ResourceType<C>;
  /** The children it may control: those it controls now and the orphans that might match (duplicates are fine). */
  readonly candidates: Iterable<C>;
  /** Whether a child belongs to the owner (its selector). */
  readonly matches: (child: C) => boolean;
  /** Aborts the reads and patches. */
  readonly signal?: AbortSignal;
}

/** What `claimChildren` did. */
export interface ClaimResult<C extends KubeObject> {
  /** The children the owner controls and that match, adopted ones as the apiserver returned them. */
  readonly claimed: C[];
  /** The orphans it adopted, as the apiserver returned them (also in `claimed`). */
  readonly adopted: C[];
  /** The children it released (controlled, no longer matching), as they were before the release. */
  readonly released: C[];
}

/**
 * Which of `o.candidates` the owner controls, adopting matching orphans and releasing children that no longer match, as
 * Kubernetes' `ClaimPods` (see the module comment). Throws `ClaimError` after every candidate was handled when some
 * writes failed.
 *
 * @showModuleComment
 */
export async function claimChildren<O extends KubeObject, C extends KubeObject>(
  o: ClaimOptions<O, C>,
): Promise<ClaimResult<C>> {
  const ownerUid = o.owner.metadata.uid;
  if (!ownerUid) throw new TypeError('claimChildren needs the owner as the API returned it (with metadata.uid)');
  const ownerDeleting = o.owner.metadata.deletionTimestamp !== undefined;
  const signal = o.signal ? { signal: o.signal } : {};
  const claimed: C[] = [];
  const adopted: C[] = [];
  const released: C[] = [];
  const errors: unknown[] = [];
  let recheck: Promise<void> | undefined;
  const canAdopt = () => {
    recheck ??= o.client.get(o.ownerType, refOf(o.owner), signal).then(
      (fresh) => {
        if (fresh.metadata.uid !== ownerUid) {
          throw new ClaimError(
            'OwnerChanged',
            `${describe(o.ownerType, o.owner)} is gone: the apiserver has uid ${fresh.metadata.uid}, the cache had ${ownerUid}`,
          );
        }
        if (fresh.metadata.deletionTimestamp !== undefined) {
          throw new ClaimError('OwnerChanged', `${describe(o.ownerType, o.owner)} is being deleted: not adopting`);
        }
      },
      (err: unknown) => {
        if (!isNotFound(err)) throw err;
        throw new ClaimError('OwnerChanged', `${describe(o.ownerType, o.owner)} is gone: not adopting`, { cause: err });
      },
    );
    return recheck;
  };
  const patch = (child: C, ownerReferences: KubeObject['metadata']['ownerReferences'] | null) =>
    o.client.patch(
      o.childType,
      refOf(child),
      { metadata: { resourceVersion: child.metadata.resourceVersion, ownerReferences } },
      { type: 'merge', ...signal },
    );

  /** Claims, adopts or releases one child; `fresh` when it was just read from the apiserver. */
  const claim = async (child: C, fresh: boolean): Promise<void> => {
    const controller = controllerOf(child);
    try {
      if (controller?.uid === ownerUid) {
        if (o.matches(child)) claimed.push(child);
        else if (!ownerDeleting) {
          const copy = structuredClone(child);
          removeOwnerReference(copy, o.owner);
          await patch(child, copy.metadata.ownerReferences ?? null);
          released.push(child);
        }
        return;
      }
      if (controller !== undefined || ownerDeleting || child.metadata.deletionTimestamp !== undefined) return;
      // the garbage collector only honours a namespaced owner in the child's own namespace
      if (o.ownerType.namespaced && child.metadata.namespace !== o.owner.metadata.namespace) return;
      if (!o.matches(child)) return;
      await canAdopt();
      const copy = structuredClone(child);
      setControllerReference(o.ownerType, o.owner, copy, { objectType: o.childType });
      const written = await patch(child, copy.metadata.ownerReferences ?? null);
      adopted.push(written);
      claimed.push(written);
    } catch (err) {
      if (isNotFound(err)) return;
      if (isConflict(err) && !fresh) {
        let current: C;
        try {
          current = await o.client.get(o.childType, refOf(child), signal);
        } catch (e) {
          if (isNotFound(e)) return;
          throw e;
        }
        return claim(current, true);
      }
      throw err;
    }
  };

  const seen = new Set<string>();
  for (const child of o.candidates) {
    const uid = child.metadata.uid ?? '';
    if (seen.has(uid)) continue;
    seen.add(uid);
    try {
      await claim(child, false);
    } catch (err) {
      if (err instanceof ClaimError) throw err;
      errors.push(err);
    }
  }
  if (errors.length > 0) {
    const first = errors[0] instanceof Error ? errors[0].message : String(errors[0]);
    throw new ClaimError(
      'ClaimFailed',
      `${describe(o.ownerType, o.owner)}: ${errors.length} of its ${o.childType.plural} could not be adopted or released: ${first}`,
      { cause: errors.length === 1 ? errors[0] : new AggregateError(errors) },
    );
  }
  return { claimed, adopted, released };
}

function describe(type: ResourceType, obj: KubeObject): string {
  return `${type.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name ?? ''}`;
}
