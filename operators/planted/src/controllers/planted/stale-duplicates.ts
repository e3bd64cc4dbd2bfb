// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/stale-duplicates
 * Children created without expectations. The buggy reconcile counts the Widget's parts in the cache and creates the
 * missing ones with `generateName`, through the raw client: when its view of ConfigMaps lags (a stale informer) a
 * second reconcile, triggered by its own status write, counts too few and creates more. Caught by `same-children`
 * under the `unobserved` fault. The fixed one creates through `ctx.create`, which records expectations: the next
 * reconcile waits until the cache has seen the creates.
 */
import { done } from '@opkit/runtime';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { Widgets } from '../../api/v1/widget.ts';
import { configMap, observed, type PlantedBug, type WidgetReconcile } from './variant.ts';

const reconcile =
  (withExpectations: boolean): WidgetReconcile =>
  async (w, ctx) => {
    const parts = await ctx.owned(ConfigMaps);
    for (let i = parts.length; i < w.spec.replicas; i++) {
      const { name: _, ...metadata } = configMap(w, '').metadata;
      const part = { metadata: { ...metadata, generateName: `${w.metadata.name}-` }, data: {} };
      if (withExpectations) await ctx.create(ConfigMaps, part);
      else {
        const owner = {
          apiVersion: Widgets.apiVersion,
          kind: Widgets.kind,
          name: w.metadata.name ?? '',
          uid: w.metadata.uid ?? '',
        };
        await ctx.rawClient.create(ConfigMaps, {
          ...part,
          metadata: { ...part.metadata, ownerReferences: [{ ...owner, controller: true, blockOwnerDeletion: true }] },
        });
      }
    }
    await ctx.status({ ...observed(w), replicas: Math.max(parts.length, w.spec.replicas) });
    return done();
  };

export const staleDuplicates: PlantedBug = {
  summary: 'children created without expectations, duplicated under a stale view',
  buggy: { reconcile: reconcile(false) },
  fixed: { reconcile: reconcile(true) },
};
