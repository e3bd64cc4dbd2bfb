// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/not-idempotent
 * A multi-step reconcile that is not idempotent: the buggy one creates part `a` and then part `b`, but only when `a`
 * is absent, so a crash between the two writes leaves `b` missing for good. Caught by `same-children` under
 * `crash@1`. The fixed one makes sure of each part on its own.
 */
import { done } from '@opkit/runtime';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { childName, configMap, type PlantedBug } from './variant.ts';

export const notIdempotent: PlantedBug = {
  summary: 'a multi-step reconcile that is not idempotent, broken by a crash between its writes',
  buggy: {
    async reconcile(w, ctx) {
      const parts = await ctx.owned(ConfigMaps);
      if (!parts.some((p) => p.metadata.name === childName(w, 'a'))) {
        await ctx.create(ConfigMaps, configMap(w, childName(w, 'a')));
        await ctx.create(ConfigMaps, configMap(w, childName(w, 'b')));
      }
      return done();
    },
  },
  fixed: {
    async reconcile(w, ctx) {
      const parts = await ctx.owned(ConfigMaps);
      for (const name of [childName(w, 'a'), childName(w, 'b')])
        if (!parts.some((p) => p.metadata.name === name)) await ctx.create(ConfigMaps, configMap(w, name));
      return done();
    },
  },
};
