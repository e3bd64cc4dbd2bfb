// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/intermediate-state
 * A controller that acts on an intermediate state it should never observe. A Widget goes `Creating` (status), then
 * its data ConfigMap is made, then `Ready`. The buggy reconcile takes `Creating` without the ConfigMap as a failed
 * create and counts it in `status.failures` — a state only a crash between its own two writes shows it. Caught by
 * `same-status` under `crash@1`. The fixed one treats `Creating` as "not done yet" and carries on.
 */
import { done } from '@opkit/runtime';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { childName, configMap, observed, type PlantedBug, type WidgetReconcile } from './variant.ts';

const reconcile =
  (countsFailures: boolean): WidgetReconcile =>
  async (w, ctx) => {
    const data = (await ctx.owned(ConfigMaps)).find((c) => c.metadata.name === childName(w, 'data'));
    const status = { ...observed(w), failures: w.status?.failures ?? 0 };
    if (data !== undefined) {
      await ctx.status({ ...status, phase: 'Ready' });
      return done();
    }
    if (w.status?.phase === 'Creating' && countsFailures) status.failures += 1; // "the last create failed"
    await ctx.status({ ...status, phase: 'Creating' });
    await ctx.create(ConfigMaps, configMap(w, childName(w, 'data')));
    await ctx.status({ ...status, phase: 'Ready' });
    return done();
  };

export const intermediateState: PlantedBug = {
  summary: 'a controller that acts on an intermediate state it should never observe',
  buggy: { reconcile: reconcile(true) },
  fixed: { reconcile: reconcile(false) },
};
