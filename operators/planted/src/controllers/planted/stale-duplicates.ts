// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/stale-duplicates
 * Children created without expectations, under names the apiserver makes up. The buggy reconcile counts the Widget's
 * parts in the cache and creates the missing ones with `generateName`, through the raw client: when its view of
 * ConfigMaps lags (a stale informer), a second reconcile, triggered by its own status write, counts too few and
 * creates more. Caught by `same-children` under the `unobserved` fault.
 *
 * The fixed one names each part (`<widget>-part-<i>`) and creates it through `ctx.create`, which records
 * expectations: within a process the next reconcile waits until the cache has seen the creates, and across a failover
 * (a new leader whose cache has not seen its predecessor's creates: the `stale` fault) a second create of the same
 * name is refused (AlreadyExists) instead of making a duplicate. Expectations alone, with `generateName`, pass
 * `unobserved` and still duplicate under `stale`: `opkit chaos` found that in the first version of this fix.
 */
import { done, isAlreadyExists } from '@opkit/runtime';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { Widgets } from '../../api/v1/widget.ts';
import { childName, configMap, observed, type PlantedBug } from './variant.ts';

export const staleDuplicates: PlantedBug = {
  summary: 'children created without expectations, duplicated under a stale view',
  buggy: {
    async reconcile(w, ctx) {
      const parts = await ctx.owned(ConfigMaps);
      for (let i = parts.length; i < w.spec.replicas; i++) {
        const { name: _, ...metadata } = configMap(w, '').metadata;
        const owner = { apiVersion: Widgets.apiVersion, kind: Widgets.kind, name: w.metadata.name ?? '' };
        const ref = { ...owner, uid: w.metadata.uid ?? '', controller: true, blockOwnerDeletion: true };
        await ctx.rawClient.create(ConfigMaps, {
          metadata: { ...metadata, generateName: `${w.metadata.name}-`, ownerReferences: [ref] },
          data: {},
        });
      }
      await ctx.status({ ...observed(w), replicas: Math.max(parts.length, w.spec.replicas) });
      return done();
    },
  },
  fixed: {
    async reconcile(w, ctx) {
      const have = new Set((await ctx.owned(ConfigMaps)).map((p) => p.metadata.name));
      for (let i = 0; i < w.spec.replicas; i++) {
        const name = childName(w, `part-${i}`);
        if (have.has(name)) continue;
        try {
          await ctx.create(ConfigMaps, configMap(w, name));
        } catch (err) {
          if (!isAlreadyExists(err)) throw err; // made by a predecessor whose create this cache has not seen yet
        }
      }
      await ctx.status({ ...observed(w), replicas: w.spec.replicas });
      return done();
    },
  },
};
