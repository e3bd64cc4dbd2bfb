/**
 * @module controller/handlers
 * Map a changed object to the requests to reconcile: the object itself (`for`), its controlling owner of a given
 * kind (`owns`, through ownerReferences — owners live in the same namespace, or are cluster-scoped), or anything a
 * function returns (`watches`, at once or asynchronously: see controller/mapping.ts).
 */
import type { Cache } from '../cache/cache.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import type { Logger } from '../logger.ts';
import type { ReconcileRequest } from './reconcile.ts';

/** The reads of the shared cache a mapper may make: `get` and `list` (by namespace, label selector or index). */
export type CacheReader = Pick<Cache, 'get' | 'list'>;

/**
 * What a `watches` mapper gets besides the changed object: the manager's cache (typed `get` and `list`, index look-ups
 * by handle: `ctx.cache.list(Backups, { index: byStore.is(name) })`), a logger naming the object, and a signal that
 * aborts when the mapping is given up (the controller stops, or the call outlasts `mapperTimeoutMs`). Never the
 * event's type: a mapper says which requests depend on the object as it is (level-triggered).
 */
export interface MapContext {
  /** The shared cache's reads (`get`, `list`); they wait until the kind's informer has synced. */
  readonly cache: CacheReader;
  /** A logger bound to the controller, the watched kind and the object's namespace and name. */
  readonly log: Logger;
  /** Aborts when the controller stops or the call took longer than the controller's `mapperTimeoutMs`. */
  readonly signal: AbortSignal;
}

/**
 * The requests a changed object of a watched kind enqueues (`.watches(kind, map)`), as controller-runtime's
 * `handler.EnqueueRequestsFromMapFunc`. It may answer at once or with a promise (an `async` function reading the
 * cache through `ctx`); an update maps the old and the new object. A mapper that throws or rejects is logged and
 * counted (`opkit_controller_mapper_errors_total`), never breaks the watch; see controller/mapping.ts for ordering,
 * concurrency and timeouts. For "the Bs whose field names this A", `referencing` and `byIndex` are one line.
 *
 * @example
 * ```ts
 * import { defineIndex, done, type Manager } from '@opkit/runtime';
 * import { refOf } from '@opkit/runtime/client';
 * import { ConfigMaps, Deployments } from '@opkit/runtime/kinds';
 *
 * // Deployments by the ConfigMaps their pods mount.
 * const byConfigMap = defineIndex(Deployments, 'configmap', (d) =>
 *   (d.spec?.template.spec?.volumes ?? []).flatMap((v) => (v.configMap?.name ? [v.configMap.name] : [])),
 * );
 *
 * export function setup(mgr: Manager): void {
 *   mgr
 *     .controller(Deployments)
 *     // A changed ConfigMap enqueues every Deployment of its namespace that mounts it.
 *     .watches(ConfigMaps, async (cm, ctx) => {
 *       const namespace = cm.metadata.namespace;
 *       const mounting = await ctx.cache.list(Deployments, { namespace, index: byConfigMap.is(cm.metadata.name ?? '') });
 *       return mounting.map(refOf);
 *     })
 *     .reconcile(async (deployment, ctx) => {
 *       ctx.log.info({ deployment: deployment.metadata.name }, 'a ConfigMap it mounts changed');
 *       return done();
 *     });
 * }
 * ```
 */
export type MapFunc<T extends KubeObject> = (
  obj: T,
  ctx: MapContext,
) => readonly ReconcileRequest[] | PromiseLike<readonly ReconcileRequest[]>;

/** The request of the object itself (its namespace and name): what `.for(kind)` enqueues. */
export function requestForObject(obj: KubeObject): readonly ReconcileRequest[] {
  const name = obj.metadata.name;
  if (!name) return [];
  return [obj.metadata.namespace ? { namespace: obj.metadata.namespace, name } : { name }];
}

/** The owners of kind `owner` (only the controlling one unless `onlyController` is false). */
export function requestsForOwner(owner: Kind, onlyController = true): (obj: KubeObject) => readonly ReconcileRequest[] {
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
