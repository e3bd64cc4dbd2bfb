/**
 * @module controller/handlers
 * Map a changed object to the requests to reconcile: the object itself (`for`), its controlling owner of a given
 * kind (`owns`, through ownerReferences — owners live in the same namespace, or are cluster-scoped), or anything a
 * function returns (`watches`).
 */
import type { Kind, KubeObject } from '../client/resource.ts';
import type { ReconcileRequest } from './reconcile.ts';

/**
 * The requests a changed object of a watched kind enqueues (`.watches(kind, map)`). It runs synchronously on every
 * event, so it reads what it needs from an informer's store, not through `await`: an index look-up
 * (`store.byIndex`) finds the primary objects that refer to the changed one.
 *
 * @example
 * ```ts
 * import { defineIndex, done, type Manager } from '@opkit/runtime';
 * import { keyOf, refOf } from '@opkit/runtime/client';
 * import { ConfigMaps, Deployments } from '@opkit/runtime/kinds';
 *
 * // Deployments by the ConfigMaps their pods mount (`namespace/name`).
 * const byConfigMap = defineIndex(Deployments, 'configmap', (d) =>
 *   (d.spec?.template.spec?.volumes ?? []).flatMap((v) =>
 *     v.configMap ? [`${d.metadata.namespace}/${v.configMap.name}`] : [],
 *   ),
 * );
 *
 * export function setup(mgr: Manager): void {
 *   mgr.cache.addIndex(byConfigMap);
 *   const deployments = mgr.cache.informer(Deployments).store;
 *   mgr
 *     .controller(Deployments)
 *     // A changed ConfigMap enqueues every Deployment that mounts it.
 *     .watches(ConfigMaps, (cm) => deployments.byIndex(byConfigMap.name, keyOf(cm)).map(refOf))
 *     .reconcile(async (deployment, ctx) => {
 *       ctx.log.info({ deployment: deployment.metadata.name }, 'a ConfigMap it mounts changed');
 *       return done();
 *     });
 * }
 * ```
 */
export type MapFunc<T extends KubeObject> = (obj: T) => readonly ReconcileRequest[];

/** The request of the object itself (its namespace and name): what `.for(kind)` enqueues. */
export function requestForObject(obj: KubeObject): readonly ReconcileRequest[] {
  const name = obj.metadata.name;
  if (!name) return [];
  return [obj.metadata.namespace ? { namespace: obj.metadata.namespace, name } : { name }];
}

/** The owners of kind `owner` (only the controlling one unless `onlyController` is false). */
export function requestsForOwner(owner: Kind, onlyController = true): MapFunc<KubeObject> {
  return (obj) => {
    const out: ReconcileRequest[] = [];
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
