// The CronJob controller on a real local control plane (@opkit/testenv, one for the run's test files), running as the
// operator's ServiceAccount with the RBAC generated from `permissions`. Its clock is the test's, and stands still
// unless a test moves it: each test sets it past a run of its CronJob, so a run is due at once, and nothing waits for
// a minute to pass (nor does a minute passing start another run). The Job controller and
// kwok run the Jobs: a Job's pods succeed (it completes) unless they cannot be scheduled (it keeps running).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getCondition } from '@opkit/runtime';
import { type Job, Jobs, Namespaces, Pods } from '@opkit/runtime/kinds';
import { startTestManager, type TestManager } from '@opkit/runtime/testing';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { type CronJob, type CronJobSpec, CronJobs } from '../src/api/v1/cronjob.ts';
import { jobFor, permissions, SCHEDULED_AT, setupCronJobController } from '../src/controllers/cronjob.ts';

let env: SharedEnvironment;
let op: TestManager;
/** The controller's clock: what its `now()` answers. */
let clock = new Date();

before(async () => {
  env = await sharedEnvironment({ nodes: 1, log: () => {} }); // npm test's (test/setup.ts), or this file's own
  op = await startTestManager(env, {
    name: 'cronjob',
    kinds: [CronJobs],
    permissions,
    setup: (mgr) => setupCronJobController(mgr, { now: () => clock }),
  });
});
after(async () => {
  try {
    await op?.stop();
  } finally {
    await env?.release(); // in a hook, so a failed test or a rejected op.stop() cannot skip it
  }
});

/** A pod template whose pods succeed at once (kwok), or, `running`, can never be scheduled (the Job runs on). */
const template = (running = false): CronJobSpec['jobTemplate'] => ({
  metadata: { labels: { team: 'ops' } },
  spec: {
    backoffLimit: 0,
    template: {
      spec: {
        containers: [{ name: 'hello', image: 'busybox' }],
        restartPolicy: 'Never',
        ...(running ? { nodeSelector: { 'example.com/no-such-node': 'true' } } : {}),
      },
    },
  },
});

let namespaces = 0;
/** A CronJob in a namespace of its own, with the clock moved to `seconds` after its creation. */
async function cronJob(spec: Partial<CronJobSpec>, seconds = 61): Promise<CronJob> {
  const namespace = `cron-${++namespaces}`;
  await op.client.create(Namespaces, { metadata: { name: namespace } });
  clock = new Date(); // no run of the new CronJob is due until the test says
  const cj = await op.client.create(CronJobs, {
    metadata: { name: 'tick', namespace },
    spec: { schedule: '* * * * *', jobTemplate: template(), ...spec },
  });
  clock = new Date(Date.parse(cj.metadata.creationTimestamp ?? '') + seconds * 1000);
  return cj;
}

const nsOf = (cj: CronJob) => cj.metadata.namespace as string;
const refOf = (cj: CronJob) => ({ namespace: nsOf(cj), name: cj.metadata.name as string });
const jobsOf = async (cj: CronJob) =>
  (await op.client.list(Jobs, { namespace: nsOf(cj) })).items.sort((a, b) =>
    (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
  );
const current = (cj: CronJob) => op.client.get(CronJobs, refOf(cj));

/** Waits until a reconcile of the CronJob's current generation wrote its Ready condition; answers it. */
async function decided(cj: CronJob, reason?: string) {
  return op.eventually(
    `CronJob ${nsOf(cj)}/${cj.metadata.name} reconciled${reason ? ` (${reason})` : ''}`,
    async () => {
      const now = await current(cj);
      const ready = getCondition(now.status?.conditions, 'Ready');
      const fresh = ready?.observedGeneration === now.metadata.generation;
      return fresh && (reason === undefined || ready?.reason === reason) ? now : undefined;
    },
  );
}

/** The scheduled time of the latest run due `seconds` after `cj` was created, on an every-minute schedule. */
const latestRun = (cj: CronJob, seconds: number) =>
  new Date(Math.floor((Date.parse(cj.metadata.creationTimestamp ?? '') + seconds * 1000) / 60_000) * 60_000);

test('a CronJob with no run due yet has a Ready condition and no Job', async () => {
  const cj = await cronJob({ schedule: '0 0 1 1 *' }, 0);
  const now = await decided(cj, 'Scheduled');
  assert.deepEqual(now.status?.active, []);
  assert.equal(now.status?.lastScheduleTime, undefined);
  assert.deepEqual(await jobsOf(cj), []);
});

/** A controller reference to `cj`, as the controller writes it on its Jobs. */
function controllerOf(cj: CronJob) {
  return {
    apiVersion: CronJobs.apiVersion,
    kind: 'CronJob',
    name: 'tick',
    uid: cj.metadata.uid ?? '',
    controller: true,
  };
}

test('a Job it controls that runs is listed in status.active', async () => {
  const cj = await cronJob({ schedule: '0 0 1 1 *' }, 0);
  await decided(cj);
  const owner = controllerOf(cj);
  const job = await op.client.create(Jobs, {
    metadata: { name: 'by-hand', namespace: nsOf(cj), ownerReferences: [owner] },
    spec: template(true).spec as NonNullable<Job['spec']>,
  });
  const listed = await op.eventually('the Job in status.active', async () => {
    const active = (await current(cj)).status?.active ?? [];
    return active.length === 1 ? active[0] : undefined;
  });
  assert.deepEqual([listed?.name, listed?.uid], ['by-hand', job.metadata.uid]);
});

test('a due run creates one Job, named after its time, from the template; status records the run', async () => {
  const cj = await cronJob({}, 61);
  const run = latestRun(cj, 61);
  const jobs = await op.eventually('one Job', async () => ((await jobsOf(cj)).length === 1 ? jobsOf(cj) : undefined));
  const job = jobs[0] as Job;
  assert.equal(job.metadata.name, `tick-${run.getTime() / 1000}`);
  assert.equal(job.metadata.annotations?.[SCHEDULED_AT], run.toISOString());
  assert.equal(job.metadata.labels?.team, 'ops');
  assert.equal(job.metadata.ownerReferences?.[0]?.uid, cj.metadata.uid);
  const now = await op.eventually('lastScheduleTime', async () => {
    const c = await current(cj);
    return c.status?.lastScheduleTime ? c : undefined;
  });
  assert.equal(Date.parse(now.status?.lastScheduleTime ?? ''), run.getTime());
});

test('a run is created once, however often the CronJob is reconciled', async () => {
  const cj = await cronJob({}, 61);
  await op.eventually('one Job', async () => (await jobsOf(cj)).length === 1);
  for (const limit of [5, 6, 7]) {
    await op.client.patch(CronJobs, refOf(cj), { spec: { failedJobsHistoryLimit: limit } });
    await decided(await current(cj));
  }
  assert.equal((await jobsOf(cj)).length, 1);
});

test('a crash between the create and the status write: the run’s Job is found, not made twice', async () => {
  const cj = await cronJob({ suspend: true }, 61);
  await decided(cj, 'Suspended');
  // the Job an earlier reconcile created for the due run, before it could record the run in the status
  const run = latestRun(cj, 61);
  const owner = controllerOf(cj);
  await op.client.create(Jobs, {
    ...jobFor(cj, run),
    metadata: { ...jobFor(cj, run).metadata, ownerReferences: [owner] },
  });
  await op.client.patch(CronJobs, refOf(cj), { spec: { suspend: false } });
  const now = await decided(await current(cj), 'Scheduled');
  assert.equal(Date.parse(now.status?.lastScheduleTime ?? ''), run.getTime());
  assert.deepEqual(
    (await jobsOf(cj)).map((j) => j.metadata.name),
    [`tick-${run.getTime() / 1000}`],
  );
});

test('suspend: no run starts', async () => {
  const cj = await cronJob({ suspend: true }, 61);
  await decided(cj, 'Suspended');
  assert.deepEqual(await jobsOf(cj), []);
});

test('a run missed by more than startingDeadlineSeconds does not start', async () => {
  // the run at the first minute after creation is 30 s or more in the past at `seconds`
  const cj = await cronJob({ startingDeadlineSeconds: 10 }, 0);
  const first = latestRun(cj, 60).getTime() - Date.parse(cj.metadata.creationTimestamp ?? '');
  clock = new Date(Date.parse(cj.metadata.creationTimestamp ?? '') + first + 30_000);
  await op.client.patch(CronJobs, refOf(cj), { spec: { suspend: false } });
  await decided(await current(cj), 'Scheduled');
  assert.deepEqual(await jobsOf(cj), []);
});

test('Forbid: while a Job runs, the next run waits', async () => {
  const cj = await cronJob({ concurrencyPolicy: 'Forbid', jobTemplate: template(true) }, 61);
  await op.eventually('the first Job', async () => (await jobsOf(cj)).length === 1);
  clock = new Date(clock.getTime() + 60_000);
  await op.client.patch(CronJobs, refOf(cj), { spec: { failedJobsHistoryLimit: 2 } });
  await decided(await current(cj), 'ConcurrentRunForbidden');
  assert.equal((await jobsOf(cj)).length, 1);
});

test('Replace: the running Job is deleted with its pods, and the new run starts', async () => {
  const cj = await cronJob({ concurrencyPolicy: 'Replace', jobTemplate: template(true) }, 61);
  const [first] = await op.eventually('the first Job', async () => {
    const jobs = await jobsOf(cj);
    return jobs.length === 1 ? jobs : undefined;
  });
  const pods = () => op.client.list(Pods, { namespace: nsOf(cj), labelSelector: `job-name=${first?.metadata.name}` });
  await op.eventually('its pod', async () => (await pods()).items.length > 0);
  clock = new Date(clock.getTime() + 60_000);
  await op.client.patch(CronJobs, refOf(cj), { spec: { failedJobsHistoryLimit: 2 } });
  const jobs = await op.eventually('only the second run’s Job', async () => {
    const all = await jobsOf(cj);
    return all.length === 1 && all[0]?.metadata.name !== first?.metadata.name ? all : undefined;
  });
  assert.equal(jobs[0]?.metadata.name, `tick-${latestRun(cj, 121).getTime() / 1000}`);
  await op.eventually('the first run’s pods gone', async () => (await pods()).items.length === 0);
});

test('finished Jobs beyond the history limits are deleted, and a deleted run does not run again', async () => {
  const cj = await cronJob({ successfulJobsHistoryLimit: 0 }, 61);
  await op.eventually('the Job, finished and deleted', async () => {
    const c = await current(cj);
    return c.status?.lastScheduleTime !== undefined && (await jobsOf(cj)).length === 0;
  });
  // more reconciles, each after the deletion was seen: the run stays run
  for (const limit of [3, 4]) {
    await op.client.patch(CronJobs, refOf(cj), { spec: { failedJobsHistoryLimit: limit } });
    await decided(await current(cj), 'Scheduled');
  }
  assert.deepEqual(await jobsOf(cj), []);
});

test('an invalid schedule (the webhook off) is reported on the CronJob, and starts nothing', async () => {
  const cj = await cronJob({ schedule: 'every minute' }, 61);
  const now = await decided(cj, 'InvalidSchedule');
  assert.equal(getCondition(now.status?.conditions, 'Ready')?.status, 'False');
  assert.deepEqual(await jobsOf(cj), []);
});

test('deleting the CronJob deletes its Jobs and their pods', async () => {
  const cj = await cronJob({ jobTemplate: template(true) }, 61);
  await op.eventually(
    'a pod of its Job',
    async () => (await op.client.list(Pods, { namespace: nsOf(cj) })).items.length > 0,
  );
  await op.client.delete(CronJobs, refOf(cj));
  await op.eventually('no Job and no pod left', async () => {
    const ns = { namespace: nsOf(cj) };
    return (await op.client.list(Jobs, ns)).items.length === 0 && (await op.client.list(Pods, ns)).items.length === 0;
  });
});
