// The pure part: when runs are due, which Jobs ended and how, which go past the history limits. No cluster.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Job } from '@opkit/runtime/kinds';
import { beyondLimit, jobFor, jobOutcome, SCHEDULED_AT, scheduledAt } from '../src/controllers/cronjob.ts';
import { dueRuns, MAX_MISSED_RUNS, parseSchedule, ScheduleError } from '../src/controllers/schedule.ts';

const t = (iso: string) => new Date(iso);

test('no run is due before the first time of the schedule; the next one is named', () => {
  const runs = dueRuns({ schedule: '*/5 * * * *', since: t('2026-01-01T00:00:30Z') }, t('2026-01-01T00:04:59Z'));
  assert.equal(runs.missed, undefined);
  assert.deepEqual(runs.next, t('2026-01-01T00:05:00Z'));
});

test('of several runs due, the latest is the one to start; a run at `since` has run already', () => {
  const since = t('2026-01-01T00:05:00Z');
  const runs = dueRuns({ schedule: '*/5 * * * *', since }, t('2026-01-01T00:17:00Z'));
  assert.deepEqual(runs.missed, t('2026-01-01T00:15:00Z'));
  assert.deepEqual(runs.next, t('2026-01-01T00:20:00Z'));
  assert.equal(dueRuns({ schedule: '*/5 * * * *', since }, t('2026-01-01T00:09:59Z')).missed, undefined);
});

test('a run is due at its very second, and the schedule is read in UTC', () => {
  const runs = dueRuns({ schedule: '30 2 * * *', since: t('2026-01-01T00:00:00Z') }, t('2026-01-01T02:30:00Z'));
  assert.deepEqual(runs.missed, t('2026-01-01T02:30:00Z'));
  assert.deepEqual(runs.next, t('2026-01-02T02:30:00Z'));
});

test('the starting deadline hides runs older than it: after a long outage only a recent run starts, or none', () => {
  const o = { schedule: '0 * * * *', since: t('2026-01-01T00:00:00Z'), startingDeadlineSeconds: 600 };
  assert.deepEqual(dueRuns(o, t('2026-01-01T05:05:00Z')).missed, t('2026-01-01T05:00:00Z'));
  assert.equal(dueRuns(o, t('2026-01-01T05:11:00Z')).missed, undefined);
});

test(`more than ${MAX_MISSED_RUNS} missed runs start none, and say what to change`, () => {
  const o = { schedule: '* * * * *', since: t('2026-01-01T00:00:00Z') };
  assert.throws(
    () => dueRuns(o, t('2026-01-01T03:00:00Z')),
    (err: unknown) =>
      err instanceof ScheduleError && err.code === 'TooManyMissedRuns' && /startingDeadlineSeconds/.test(err.message),
  );
  // a deadline bounds the count
  assert.ok(dueRuns({ ...o, startingDeadlineSeconds: 3_000 }, t('2026-01-01T03:00:00Z')).missed);
});

test('a schedule that is not five valid fields is refused, saying why', () => {
  for (const bad of ['* * * *', '61 * * * *', 'every minute', '* * * * * *', ''])
    assert.throws(() => parseSchedule(bad), ScheduleError, bad);
  assert.doesNotThrow(() => parseSchedule('0 9 * * 1-5'));
});

const job = (name: string, o: { at?: string; created?: string; outcome?: 'Complete' | 'Failed' } = {}): Job => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata: {
    name,
    ...(o.at ? { annotations: { [SCHEDULED_AT]: o.at } } : {}),
    ...(o.created ? { creationTimestamp: o.created } : {}),
  },
  ...(o.outcome ? { status: { conditions: [{ type: o.outcome, status: 'True' }] } } : {}),
});

test('a Job has run when its Complete or Failed condition is True; otherwise it runs', () => {
  assert.equal(jobOutcome(job('a', { outcome: 'Complete' })), 'Complete');
  assert.equal(jobOutcome(job('b', { outcome: 'Failed' })), 'Failed');
  assert.equal(jobOutcome(job('c')), undefined);
  assert.equal(jobOutcome({ ...job('d'), status: { conditions: [{ type: 'Complete', status: 'False' }] } }), undefined);
});

test('the history limits delete the oldest finished Jobs, by their scheduled time', () => {
  const jobs = [
    job('new', { at: '2026-01-01T00:03:00Z' }),
    job('old', { at: '2026-01-01T00:01:00Z' }),
    job('mid', { at: '2026-01-01T00:02:00Z' }),
  ];
  assert.deepEqual(
    beyondLimit(jobs, 1).map((j) => j.metadata.name),
    ['old', 'mid'],
  );
  assert.deepEqual(beyondLimit(jobs, 3), []);
  assert.deepEqual(beyondLimit(jobs, undefined), [], 'no limit: none');
  assert.equal(beyondLimit(jobs, 0).length, 3);
});

test('a run’s Job is named after its time, carries the template and the scheduled time', () => {
  const at = t('2026-01-01T00:05:00Z');
  const j = jobFor(
    {
      apiVersion: 'batch.tutorial.kubebuilder.io/v1',
      kind: 'CronJob',
      metadata: { name: 'nightly', namespace: 'ops' },
      spec: {
        schedule: '*/5 * * * *',
        concurrencyPolicy: 'Allow',
        jobTemplate: {
          metadata: { labels: { team: 'ops' } },
          spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Never' } } },
        },
      },
    },
    at,
  );
  assert.equal(j.metadata.name, 'nightly-1767225900');
  assert.equal(j.metadata.namespace, 'ops');
  assert.equal(j.metadata.labels?.team, 'ops');
  assert.deepEqual(scheduledAt(j), at);
  assert.equal(j.spec?.template.spec?.containers[0]?.image, 'busybox');
});
