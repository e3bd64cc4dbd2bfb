/**
 * The CronJob controller: runs `spec.jobTemplate` as a Job at each time of `spec.schedule`, as the kubebuilder book's
 * CronJob does. Each run's Job is named after its scheduled time (`<cronjob>-<unix seconds>`), so a run is created
 * once however often the reconcile repeats; the time is also in its `scheduled-at` annotation.
 *
 * Guarantees:
 * - `status.lastScheduleTime` only moves forward: a run whose Job the history limits deleted is not run again.
 * - `concurrencyPolicy`: Allow runs beside the running Jobs; Forbid skips a run while one runs (and retries it until
 *   its starting deadline); Replace deletes the running Jobs first. Jobs are deleted with their pods (Background).
 * - Finished Jobs beyond `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, oldest first.
 * - `suspend: true` starts nothing; the running Jobs go on.
 * - A schedule that cannot run (it does not parse, or more than 100 runs were missed) is reported (condition
 *   Ready=False, an Event) and not retried until the CronJob changes.
 * - A run whose Job exists already (created by a reconcile that stopped before its status write) is not created
 *   again: the name is the run's.
 * The clock is injected (`now`), so tests choose the time.
 */
import {
  isAlreadyExists,
  type Manager,
  type ObjectContext,
  type Permission,
  permission,
  requeueAfter,
  setCondition,
  TerminalError,
} from '@opkit/runtime';
import { type Job, Jobs } from '@opkit/runtime/kinds';
import { type CronJob, type CronJobStatus, CronJobs } from '../api/v1/cronjob.ts';
import { dueRuns, ScheduleError } from './schedule.ts';

export const SCHEDULED_AT = 'batch.tutorial.kubebuilder.io/scheduled-at';

export const permissions: readonly Permission[] = [
  permission(CronJobs, ['list', 'watch']),
  permission(CronJobs, ['patch', 'update'], { subresource: 'status' }),
  permission(Jobs, ['list', 'watch', 'create', 'delete']),
];

/** How a Job ended: `Complete`, `Failed`, or undefined while it runs. */
export function jobOutcome(job: Job): 'Complete' | 'Failed' | undefined {
  for (const c of job.status?.conditions ?? [])
    if ((c.type === 'Complete' || c.type === 'Failed') && c.status === 'True') return c.type;
  return undefined;
}

/** The time a Job of ours was scheduled for, from its annotation (undefined if it has none or a bad one). */
export function scheduledAt(job: Job): Date | undefined {
  const at = job.metadata.annotations?.[SCHEDULED_AT];
  const t = at === undefined ? Number.NaN : Date.parse(at);
  return Number.isNaN(t) ? undefined : new Date(t);
}

/** The finished Jobs to delete so that `limit` remain: the oldest first (by scheduled time, else creation). */
export function beyondLimit(finished: readonly Job[], limit: number | undefined): Job[] {
  if (limit === undefined) return [];
  const time = (j: Job) => {
    const t = scheduledAt(j)?.getTime() ?? Date.parse(j.metadata.creationTimestamp ?? '');
    return Number.isNaN(t) ? 0 : t;
  };
  return [...finished].sort((a, b) => time(a) - time(b)).slice(0, Math.max(0, finished.length - limit));
}

/** The Job of the run scheduled at `at`: the template's metadata and spec, named after the time. */
export function jobFor(cj: CronJob, at: Date): Job {
  const t = cj.spec.jobTemplate;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: `${cj.metadata.name}-${Math.floor(at.getTime() / 1000)}`,
      namespace: cj.metadata.namespace ?? 'default',
      labels: { ...t.metadata?.labels },
      annotations: { ...t.metadata?.annotations, [SCHEDULED_AT]: at.toISOString() },
    },
    spec: structuredClone(t.spec) as NonNullable<Job['spec']>,
  };
}

const ref = (j: Job) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  name: j.metadata.name ?? '',
  namespace: j.metadata.namespace ?? '',
  uid: j.metadata.uid ?? '',
});

export interface CronJobControllerOptions {
  /** The clock (default: the system's). */
  readonly now?: () => Date;
}

export function reconcilerFor(options: CronJobControllerOptions = {}) {
  const clock = options.now ?? (() => new Date());
  return async function reconcileCronJob(cj: CronJob, ctx: ObjectContext<CronJob>) {
    const now = clock();
    const jobs = await ctx.owned(Jobs);
    const running = jobs.filter((j) => jobOutcome(j) === undefined);
    const succeeded = jobs.filter((j) => jobOutcome(j) === 'Complete');
    const failed = jobs.filter((j) => jobOutcome(j) === 'Failed');
    let last = cj.status?.lastScheduleTime ? new Date(cj.status.lastScheduleTime) : undefined;
    for (const j of jobs) {
      const at = scheduledAt(j);
      if (at && (!last || at > last)) last = at;
    }
    for (const j of [
      ...beyondLimit(succeeded, cj.spec.successfulJobsHistoryLimit),
      ...beyondLimit(failed, cj.spec.failedJobsHistoryLimit),
    ])
      await ctx.delete(Jobs, j);

    const generation = cj.metadata.generation ?? 0;
    const write = async (ready: { status: 'True' | 'False'; reason: string; message: string }) => {
      const { conditions } = setCondition(cj.status?.conditions, {
        type: 'Ready',
        ...ready,
        observedGeneration: generation,
      });
      const status: CronJobStatus = {
        active: running.map(ref),
        ...(last ? { lastScheduleTime: last.toISOString() } : {}),
        conditions,
      };
      await ctx.status(status);
    };

    if (cj.spec.suspend) {
      await write({ status: 'True', reason: 'Suspended', message: 'suspended: no run starts' });
      return {};
    }
    let runs: ReturnType<typeof dueRuns>;
    try {
      runs = dueRuns(
        {
          schedule: cj.spec.schedule,
          startingDeadlineSeconds: cj.spec.startingDeadlineSeconds,
          since: last ?? new Date(cj.metadata.creationTimestamp ?? now.toISOString()),
        },
        now,
      );
    } catch (err) {
      if (!(err instanceof ScheduleError)) throw err;
      await write({ status: 'False', reason: err.code, message: err.message });
      ctx.events.warning(err.code, err.message);
      throw new TerminalError(err.message, { cause: err });
    }
    const next = requeueAfter(Math.max(0, runs.next.getTime() - now.getTime()));
    const missed = runs.missed;
    if (missed === undefined) {
      await write({ status: 'True', reason: 'Scheduled', message: `next run at ${runs.next.toISOString()}` });
      return next;
    }
    if (cj.spec.concurrencyPolicy === 'Forbid' && running.length > 0) {
      const message = `the run of ${missed.toISOString()} waits: ${running.length} Job(s) still running`;
      await write({ status: 'True', reason: 'ConcurrentRunForbidden', message });
      return next;
    }
    if (cj.spec.concurrencyPolicy === 'Replace') for (const j of running.splice(0)) await ctx.delete(Jobs, j); // with its pods: Background
    let job: Job;
    try {
      job = await ctx.create(Jobs, jobFor(cj, missed));
      ctx.events.normal('SuccessfulCreate', `created Job ${job.metadata.name} for the run of ${missed.toISOString()}`);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      job = jobFor(cj, missed); // created by an earlier reconcile whose status write was lost: this run has run
    }
    if (!running.some((j) => j.metadata.name === job.metadata.name) && job.metadata.uid) running.push(job);
    last = missed;
    await write({ status: 'True', reason: 'Scheduled', message: `next run at ${runs.next.toISOString()}` });
    return next;
  };
}

export function setupCronJobController(mgr: Manager, options: CronJobControllerOptions = {}): void {
  mgr.controller(CronJobs).named('cronjob').owns(Jobs).reconcile(reconcilerFor(options));
}
