/**
 * `ctx.delete` against a real control plane (the Job controller and the garbage collector run): a Job deleted the
 * framework's way takes its pods (Background propagation, as kubectl), and one deleted with `propagationPolicy:
 * 'Orphan'` leaves them, released. The apiserver's own default for batch/v1 Jobs is Orphan.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Cache } from '../src/cache/index.ts';
import { Jobs, Namespaces, Pods } from '../src/client/builtins.ts';
import type { Client } from '../src/client/index.ts';
import { ControllerBuilder } from '../src/controller/index.ts';
import { UsageError } from '../src/errors.ts';
import { done } from '../src/index.ts';
import { Widgets, waitFor, widgetControlPlane } from './support.ts';

const NS = 'delete-jobs';

/** The pods of Job `job`, read from the server. */
async function podsOf(client: Client, job: string) {
  return (await client.list(Pods, { namespace: NS, labelSelector: `batch.kubernetes.io/job-name=${job}` })).items;
}

describe('ctx.delete against a real control plane', () => {
  const plane = widgetControlPlane();
  let client: Client;
  before(() => {
    ({ client } = plane);
  });

  test("a Job deleted through ctx takes its pods (Background); with propagationPolicy 'Orphan' they stay", async () => {
    await client.create(Namespaces, { metadata: { name: NS } });
    const refusals: unknown[] = [];
    // a Widget with replicas 1 has one Job of 2 pods; with 0 its Jobs are deleted, orphaning their pods when its
    // color says 'orphan'
    const c = new ControllerBuilder({ client, cache: new Cache({ client, namespace: NS }) })
      .for(Widgets)
      .owns(Jobs)
      .reconcile(async (w, ctx) => {
        const jobs = await ctx.owned(Jobs);
        if ((w.spec?.replicas ?? 0) > 0) {
          if (jobs.length === 0) {
            await ctx.create(Jobs, {
              metadata: { name: `${w.metadata.name}-job` },
              spec: {
                parallelism: 2,
                completions: 2,
                template: { spec: { restartPolicy: 'Never', containers: [{ name: 'work', image: 'busybox' }] } },
              },
            });
          }
          return done();
        }
        for (const job of jobs) {
          // another object's uid as a precondition is refused before any request
          await ctx.delete(Jobs, job, { preconditions: { uid: 'not-this-job' } }).catch((e) => refusals.push(e));
          await ctx.delete(Jobs, job, w.spec?.color === 'orphan' ? { propagationPolicy: 'Orphan' } : {});
        }
        return done();
      });
    const stop = plane.stopper();
    const running = c.start(stop.signal);
    try {
      for (const [name, color] of [
        ['cascade', 'default'],
        ['keep', 'orphan'],
      ] as const) {
        await client.create(Widgets, { metadata: { name, namespace: NS }, spec: { replicas: 1, color } });
      }
      for (const name of ['cascade', 'keep']) {
        await waitFor(`the 2 pods of ${name}-job`, async () => (await podsOf(client, `${name}-job`)).length === 2);
        await client.patch(Widgets, { namespace: NS, name }, { spec: { replicas: 0 } });
      }
      for (const name of ['cascade', 'keep']) {
        await waitFor(
          `${name}-job deleted`,
          async () => (await client.getIfExists(Jobs, { namespace: NS, name: `${name}-job` })) === undefined,
        );
      }
      await waitFor("cascade-job's pods gone with it", async () => (await podsOf(client, 'cascade-job')).length === 0);
      const kept = await waitFor("keep-job's pods released by the garbage collector", async () => {
        const pods = await podsOf(client, 'keep-job');
        return pods.every((p) => (p.metadata.ownerReferences ?? []).length === 0) && pods;
      });
      assert.equal(kept.length, 2, "an Orphan delete leaves the Job's pods");
      assert.ok(refusals.length > 0, 'the mismatched uid precondition was tried');
      for (const e of refusals) {
        assert.ok(e instanceof UsageError && e.code === 'InvalidArgument', String(e));
        assert.match(e.message, /uid precondition not-this-job/);
      }
    } finally {
      stop.abort();
      await running;
    }
  });
});
