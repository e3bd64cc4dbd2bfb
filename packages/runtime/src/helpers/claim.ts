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
 * is gone (NotFound) is skipped. Every other failure is collected and thrown once all candidates were handled, as a
 * `ClaimError` (its `cause` holds the errors); the owner re-read is done at most once per call. Needs `get` on the owner's kind and
 * `patch` on the children's kind.
 */

import type { Client } from '../client/client.ts';
import { isConflict, isNotFound } from '../client/errors.ts';
import { type Kind, type KubeObject, refOf } from '../client/resource.ts';
import { OpkitError, UsageError } from '../errors.ts';
import { controllerOf, removeOwnerReference, setControllerReference } from './ownerrefs.ts';

/** Why `claimChildren` failed. An owner without `metadata.uid` is a `UsageError` (`InvalidArgument`). */
export type ClaimErrorCode =
  /** The owner's fresh read shows another uid, a deletion or no owner at all: it adopts nothing (retry the reconcile). */
  | 'OwnerChanged'
  /** Some adoptions or releases failed, after every candidate was handled: the errors are in `cause`. */
  | 'ClaimFailed';

/** Adopting or releasing failed (`ClaimFailed`, the errors in `cause`), or the owner is not the one the cache showed. */
export class ClaimError extends OpkitError<ClaimErrorCode> {
  override readonly name = 'ClaimError';
}

/** What `claimChildren` judges: the owner, its candidate children, and how to tell that a child belongs to it. */
export interface ClaimOptions<O extends KubeObject, C extends KubeObject> {
  /** The client the fresh read of the owner and the patches of the children go through. */
  readonly client: Client;
  /** The owner's kind. */
  readonly ownerType: Kind<O>;
  /** The owner as read (from the cache): it needs `metadata.uid`. */
  readonly owner: O;
  /** The children's kind. */
  readonly childType: Kind<C>;
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
  if (!ownerUid) {
    throw new UsageError('InvalidArgument', 'claimChildren needs the owner as the API returned it (with metadata.uid)');
  }
  const judge = new Judge(o, ownerUid);
  const errors: unknown[] = [];
  const seen = new Set<string>();
  for (const child of o.candidates) {
    const uid = child.metadata.uid ?? '';
    if (seen.has(uid)) continue;
    seen.add(uid);
    try {
      await judge.claim(child, false);
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
  return judge.result;
}

/** One call's judgement: what was claimed, adopted and released so far, and the owner's re-read (made at most once). */
class Judge<O extends KubeObject, C extends KubeObject> {
  readonly result: ClaimResult<C> = { claimed: [], adopted: [], released: [] };
  readonly #o: ClaimOptions<O, C>;
  readonly #ownerUid: string;
  readonly #ownerDeleting: boolean;
  readonly #signal: { signal?: AbortSignal };
  #recheck: Promise<void> | undefined;

  constructor(o: ClaimOptions<O, C>, ownerUid: string) {
    this.#o = o;
    this.#ownerUid = ownerUid;
    this.#ownerDeleting = o.owner.metadata.deletionTimestamp !== undefined;
    this.#signal = o.signal ? { signal: o.signal } : {};
  }

  /** Claims, adopts or releases one child; `fresh` when it was just read from the apiserver. */
  async claim(child: C, fresh: boolean): Promise<void> {
    try {
      await this.#judge(child);
    } catch (err) {
      if (isNotFound(err)) return;
      if (!isConflict(err) || fresh) throw err;
      let current: C;
      try {
        current = await this.#o.client.get(this.#o.childType, refOf(child), this.#signal);
      } catch (e) {
        if (isNotFound(e)) return;
        throw e;
      }
      return this.claim(current, true);
    }
  }

  async #judge(child: C): Promise<void> {
    const o = this.#o;
    const controller = controllerOf(child);
    if (controller?.uid === this.#ownerUid) {
      if (o.matches(child)) this.result.claimed.push(child);
      else if (!this.#ownerDeleting) {
        const copy = structuredClone(child);
        removeOwnerReference(copy, o.owner);
        await this.#patch(child, copy.metadata.ownerReferences ?? null);
        this.result.released.push(child);
      }
      return;
    }
    if (controller !== undefined || this.#ownerDeleting || child.metadata.deletionTimestamp !== undefined) return;
    // the garbage collector only honours a namespaced owner in the child's own namespace
    if (o.ownerType.namespaced && child.metadata.namespace !== o.owner.metadata.namespace) return;
    if (!o.matches(child)) return;
    await this.#canAdopt();
    const copy = structuredClone(child);
    setControllerReference(o.ownerType, o.owner, copy, { objectType: o.childType });
    const written = await this.#patch(child, copy.metadata.ownerReferences ?? null);
    this.result.adopted.push(written);
    this.result.claimed.push(written);
  }

  #patch(child: C, ownerReferences: KubeObject['metadata']['ownerReferences'] | null): Promise<C> {
    return this.#o.client.patch(
      this.#o.childType,
      refOf(child),
      { metadata: { resourceVersion: child.metadata.resourceVersion, ownerReferences } },
      { type: 'merge', ...this.#signal },
    );
  }

  /** The owner's fresh read (once per call): resolves when it has the cached uid and is not being deleted. */
  #canAdopt(): Promise<void> {
    const o = this.#o;
    const uid = this.#ownerUid;
    this.#recheck ??= o.client.get(o.ownerType, refOf(o.owner), this.#signal).then(
      (fresh) => {
        if (fresh.metadata.uid !== uid) {
          throw new ClaimError(
            'OwnerChanged',
            `${describe(o.ownerType, o.owner)} is gone: the apiserver has uid ${fresh.metadata.uid}, the cache had ${uid}`,
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
    return this.#recheck;
  }
}

function describe(type: Kind, obj: KubeObject): string {
  return `${type.kind} ${obj.metadata.namespace ? `${obj.metadata.namespace}/` : ''}${obj.metadata.name ?? ''}`;
}
