// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/status-timestamp
 * A status that never settles: the buggy reconcile writes the time of each reconcile into the status, so each write
 * is a change, which is an event, which is a reconcile. Caught by `settles` in the fault-free run. The fixed one
 * writes only what describes the Widget.
 */
import { done } from '@opkit/runtime';
import { observed, type PlantedBug, type WidgetReconcile } from './variant.ts';

const reconcile =
  (stamp: boolean): WidgetReconcile =>
  async (w, ctx) => {
    await ctx.status({
      ...observed(w),
      phase: 'Ready',
      ...(stamp ? { lastReconciled: new Date().toISOString() } : {}),
    });
    return done();
  };

export const statusTimestamp: PlantedBug = {
  summary: 'a status that never settles (a timestamp written on every reconcile)',
  buggy: { reconcile: reconcile(true) },
  fixed: { reconcile: reconcile(false) },
};
