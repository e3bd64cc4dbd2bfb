/**
 * @module controller/handlers
 * Map a changed object to the requests to reconcile: the object itself (`for`), its controlling owner of a given
 * kind (`owns`, through ownerReferences — owners live in the same namespace, or are cluster-scoped), or anything a
 * function returns (`watches`).
 */
import type { KubeObject, ResourceType } from '../client/resource.ts';
import type { Request } from './reconcile.ts';

export type MapFunc<T extends KubeObject> = (obj: T) => readonly Request[];

export function requestForObject(obj: KubeObject): readonly Request[] {
  const name = obj.metadata.name;
  if (!name) return [];
  return [obj.metadata.namespace ? { namespace: obj.metadata.namespace, name } : { name }];
}

/** The owners of kind `owner` (only the controlling one unless `onlyController` is false). */
export function requestsForOwner(owner: ResourceType, onlyController = true): MapFunc<KubeObject> {
  return (obj) => {
    const out: Request[] = [];
    for (const ref of obj.metadata.ownerReferences ?? []) {
      if (onlyController && !ref.controller) continue;
      if (ref.kind !== owner.kind || groupOf(ref.apiVersion) !== owner.group) continue;
      out.push(
        owner.namespaced && obj.metadata.namespace
          ? { namespace: obj.metadata.namespace, name: ref.name }
          : { name: ref.name },
      );
    }
    return out;
  };
}

function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}
