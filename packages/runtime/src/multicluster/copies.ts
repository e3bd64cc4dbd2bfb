/**
 * @module multicluster/copies
 * What replaces owner references across clusters. An owner reference names an object of the same cluster (by uid);
 * in another cluster the garbage collector finds no such owner and deletes the object at once. An object a fleet's
 * controller makes in a member from a hub object (a copy) carries instead:
 * - the label `opkit.dev/fleet-copy-of: <the hub object's uid>`: which objects are copies (`fleetCopies`, the
 *   predicate of the controller's watch of the member; `isFleetCopy`, the test before it deletes one), and of which version of
 *   the hub object (one deleted and made again under the same name has another uid);
 * - the annotation `opkit.dev/fleet-copy-source: <apiVersion>/<kind> <namespace>/<name>`, for people.
 *
 * The clean-up is level-triggered, not a finalizer: a member's controller watches both its copies and the hub objects
 * (`watchesIn(member.hub.cache, …)`); reconciling a copy whose hub object is gone deletes it. Its watch's initial list
 * brings every copy, so copies whose hub object went while the operator was down, or while the member was
 * disengaged, are deleted when it is engaged again. A finalizer on the hub object (one per member) would instead hold
 * the hub object's deletion while any member is unreachable, and forever once a member left the fleet.
 */
import type { KubeObject } from '../client/resource.ts';
import { type Predicate, predicate } from '../controller/predicates.ts';

/** The label of a copy: the uid of the hub object it was made from. */
export const FLEET_COPY_LABEL = 'opkit.dev/fleet-copy-of';
/** The annotation of a copy: the hub object it was made from, for people. */
export const FLEET_COPY_SOURCE = 'opkit.dev/fleet-copy-source';

/** The labels and annotations of a copy of `source` (merge them into the copy's metadata). */
export function fleetCopyMetadata(source: KubeObject): {
  labels: Record<string, string>;
  annotations: Record<string, string>;
} {
  const m = source.metadata ?? {};
  const where = m.namespace ? `${m.namespace}/${m.name}` : `${m.name}`;
  return {
    labels: { [FLEET_COPY_LABEL]: m.uid ?? '' },
    annotations: { [FLEET_COPY_SOURCE]: `${source.apiVersion ?? ''}/${source.kind ?? ''} ${where}` },
  };
}

/** Whether `obj` is a copy a fleet made (it carries the copy label). */
export const isFleetCopy = (obj: KubeObject): boolean => (obj.metadata?.labels?.[FLEET_COPY_LABEL] ?? '') !== '';

/** The predicate of a member controller's watch of copies: only copies (`mgr.controller(kind, fleetCopies)`). */
export const fleetCopies: Predicate<KubeObject> = predicate(isFleetCopy);
