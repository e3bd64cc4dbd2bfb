/**
 * @module controller/references
 * "Watch A, reconcile the Bs that reference it" in one line — the most common mapping after `owns`:
 *
 * ```ts
 * import { done, type Manager } from '@opkit/runtime';
 * import { referencing } from '@opkit/runtime/controller';
 * import { Pods, ServiceAccounts } from '@opkit/runtime/kinds';
 *
 * export function setup(mgr: Manager): void {
 *   // A changed ServiceAccount reconciles the Pods of its namespace whose spec.serviceAccountName names it.
 *   mgr.controller(Pods).watches(ServiceAccounts, referencing(Pods, 'spec.serviceAccountName')).reconcile(async () => done());
 * }
 * ```
 * `referencing(B, path)` indexes the Bs by the string field at `path` (`fieldIndex`) and maps each changed A to the Bs
 * whose field holds A's name; `byIndex(index)` does the same with an index of your own (several references per B, a
 * computed value, a reference to another namespace).
 *
 * Guarantees: the Bs are read from the cache through the index, which the cache keeps current on every change of a B,
 * so a B created after its A, or whose reference moved, is found by the next change of the A (and is reconciled for its
 * own change anyway, as the primary kind). What is matched, by `options.by`:
 * - `'name'` (default): the index holds the referenced A's name. A namespaced A finds the Bs of ITS namespace (a
 *   reference by name is a reference within the namespace, as a Pod's `configMap.name`); a cluster-scoped A (a
 *   StorageClass, a Namespace, a cluster-scoped kind of yours) finds the Bs of every namespace; cluster-scoped Bs are
 *   matched whatever A's namespace.
 * - `'key'`: the index holds `namespace/name` of the referenced A (its key, just `name` for a cluster-scoped A), so a B
 *   may reference an A of another namespace; Bs of every namespace are matched.
 * The mapping is async (it waits, the first time, for the Bs' informer to sync); see controller/mapping.ts.
 * Caveat: with a cache limited to some namespaces, a change of an A in a namespace whose Bs are not cached fails the
 * mapping with `CacheError` `NamespaceNotCached` (logged and counted): watch the same namespaces for A and B.
 */
import { type FieldPath, fieldIndex, type Index } from '../cache/indexes.ts';
import { type Kind, type KubeObject, keyOf, refOf } from '../client/resource.ts';
import type { MapContext, MapFunc } from './handlers.ts';
import type { ReconcileRequest } from './reconcile.ts';

/** How a B's index names the A it references (see the module comment). */
export interface ReferenceOptions {
  /**
   * `'name'` (default): the A's name, Bs of the A's namespace (all namespaces for a cluster-scoped A); `'key'`: the A's
   * `namespace/name` (`name` when cluster-scoped), Bs of every namespace.
   */
  readonly by?: 'name' | 'key';
}

/**
 * A mapper for `.watches(A, …)`: a changed A enqueues every B that `index` finds under A's name (or its
 * `namespace/name` with `{ by: 'key' }`), as controller-runtime users write with `EnqueueRequestsFromMapFunc` and a
 * field index.
 *
 * @example
 * ```ts
 * import { defineIndex, done, type Manager } from '@opkit/runtime';
 * import { byIndex } from '@opkit/runtime/controller';
 * import { ConfigMaps, Deployments } from '@opkit/runtime/kinds';
 *
 * // Deployments by every ConfigMap their pods mount.
 * const byConfigMap = defineIndex(Deployments, 'configmaps', (d) =>
 *   (d.spec?.template.spec?.volumes ?? []).flatMap((v) => (v.configMap?.name ? [v.configMap.name] : [])),
 * );
 *
 * export function setup(mgr: Manager): void {
 *   mgr.controller(Deployments).watches(ConfigMaps, byIndex(byConfigMap)).reconcile(async () => done());
 * }
 * ```
 */
export function byIndex<B extends KubeObject>(index: Index<B>, options: ReferenceOptions = {}): MapFunc<KubeObject> {
  const by = options.by ?? 'name';
  return async (a: KubeObject, ctx: MapContext): Promise<readonly ReconcileRequest[]> => {
    const name = a.metadata.name;
    if (!name) return [];
    const namespace = by === 'name' && index.resource.namespaced ? a.metadata.namespace : undefined;
    const value = by === 'key' ? keyOf(a) : name;
    const bs = await ctx.cache.list(index.resource, { namespace, index: index.is(value) });
    return bs.map(refOf);
  };
}

/**
 * A mapper for `.watches(A, …)`: a changed A enqueues every B whose string field at `path` (a path of B's type: a
 * typo does not compile) holds A's name — or, with `{ by: 'key' }`, its `namespace/name`. Built on `fieldIndex(kind,
 * path)`, registered with the cache on first use.
 *
 * @example
 * ```ts
 * import { done, type Manager } from '@opkit/runtime';
 * import { referencing } from '@opkit/runtime/controller';
 * import { Nodes, Pods, ServiceAccounts } from '@opkit/runtime/kinds';
 *
 * export function setup(mgr: Manager): void {
 *   mgr
 *     .controller(Pods)
 *     .watches(ServiceAccounts, referencing(Pods, 'spec.serviceAccountName')) // the Pods of its namespace that run as it
 *     .watches(Nodes, referencing(Pods, 'spec.nodeName')) // a cluster-scoped A: the Pods of every namespace on it
 *     .reconcile(async () => done());
 * }
 * ```
 */
export function referencing<B extends KubeObject, const P extends FieldPath<B>>(
  kind: Kind<B>,
  path: P,
  options: ReferenceOptions = {},
): MapFunc<KubeObject> {
  return byIndex(fieldIndex(kind, path), options);
}
