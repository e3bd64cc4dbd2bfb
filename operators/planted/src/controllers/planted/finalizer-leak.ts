// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/finalizer-leak
 * A finalizer whose clean-up leaks when the replica crashes half-way. Each Widget has an external resource (a
 * ConfigMap it does not own, `<name>-external`) that only the finalizer removes. The buggy operator handles the
 * finalizer by hand and removes it first, then deletes the resource: a crash between the two writes leaks it. Caught
 * by `same-objects` under `crash@1` of the delete. The fixed one uses opkit's `.finalize`, which removes the
 * finalizer only after the clean-up succeeded.
 */
import { done, isAlreadyExists, isNotFound } from '@opkit/runtime';
import type { Client } from '@opkit/runtime/client';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { type Widget, Widgets } from '../../api/v1/widget.ts';
import { at, childName, configMap, type PlantedBug, type WidgetReconcile } from './variant.ts';

const FINALIZER = 'planted.example.com/external';

/** Runs a create; AlreadyExists means it is there already. */
async function ensure(make: () => Promise<unknown>): Promise<void> {
  try {
    await make();
  } catch (err) {
    if (!isAlreadyExists(err)) throw err;
  }
}

const ensureExternal: WidgetReconcile = async (w, ctx) => {
  if (!(await ctx.cache.get(ConfigMaps, at(w, childName(w, 'external')))))
    await ensure(() => ctx.create(ConfigMaps, configMap(w, childName(w, 'external')), { owned: false }));
  return done();
};

const removeExternal = async (w: Widget, ctx: { readonly rawClient: Client }) => {
  try {
    await ctx.rawClient.delete(ConfigMaps, at(w, childName(w, 'external')));
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
};

export const finalizerLeak: PlantedBug = {
  summary: 'a finalizer whose clean-up leaks when the replica crashes half-way',
  buggy: {
    // by hand: a request reconcile sees the Widget while it is deleted, and handles the finalizer itself
    async request(req, ctx) {
      const w = await ctx.cache.get(Widgets, req);
      if (!w) return done();
      const finalizers = w.metadata.finalizers ?? [];
      const self = at(w, w.metadata.name ?? '');
      if (w.metadata.deletionTimestamp) {
        if (!finalizers.includes(FINALIZER)) return done();
        const rest = finalizers.filter((f) => f !== FINALIZER);
        await ctx.rawClient.patch(Widgets, self, { metadata: { finalizers: rest } });
        await removeExternal(w, ctx);
        return done();
      }
      if (!finalizers.includes(FINALIZER))
        await ctx.rawClient.patch(Widgets, self, { metadata: { finalizers: [...finalizers, FINALIZER] } });
      if (!(await ctx.cache.get(ConfigMaps, at(w, childName(w, 'external')))))
        await ensure(() => ctx.rawClient.create(ConfigMaps, configMap(w, childName(w, 'external'))));
      return done();
    },
  },
  fixed: {
    reconcile: ensureExternal,
    finalizer: {
      name: FINALIZER,
      async cleanup(w, ctx) {
        await removeExternal(w, ctx);
        return done();
      },
    },
  },
};
