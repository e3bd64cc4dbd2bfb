// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/orphan-delete
 * A child deleted with Orphan propagation. While `spec.run` is true the Widget has a Job; when it turns false the
 * buggy reconcile deletes the Job through the raw client with no propagation policy, which batch/v1 takes as Orphan:
 * the Job's pods stay, with no owner. Caught by `no-orphans` in the fault-free run (a scenario turns `run` off:
 * test/chaos/run.ts). The fixed one deletes through `ctx.delete`, whose propagation is Background.
 */
import { done } from '@opkit/runtime';
import { Jobs } from '@opkit/runtime/kinds';
import { at, childName, type PlantedBug, type WidgetReconcile } from './variant.ts';

const reconcile =
  (orphan: boolean): WidgetReconcile =>
  async (w, ctx) => {
    const [job] = (await ctx.owned(Jobs)).filter((j) => j.metadata.name === childName(w, 'run'));
    if (w.spec.run && job === undefined)
      await ctx.create(Jobs, {
        metadata: at(w, childName(w, 'run')),
        spec: {
          backoffLimit: 0,
          template: {
            spec: { restartPolicy: 'Never', containers: [{ name: 'run', image: 'registry.example/run:1' }] },
          },
        },
      });
    if (!w.spec.run && job !== undefined) {
      if (orphan) await ctx.rawClient.delete(Jobs, at(w, job.metadata.name ?? ''));
      else await ctx.delete(Jobs, job);
    }
    return done();
  };

export const orphanDelete: PlantedBug = {
  summary: 'a child deleted with Orphan propagation',
  buggy: { reconcile: reconcile(true), ownsJobs: true },
  fixed: { reconcile: reconcile(false), ownsJobs: true },
};
