import assert from 'node:assert/strict';
import { test } from 'node:test';
import { job, snapshot, store } from './fixtures.ts';
import { planRestore, restoreJob } from './restore.ts';

const restoring = (status: NonNullable<ReturnType<typeof store>['status']>['restore']) =>
  store({ restoreFrom: 'snap' }, status ? { restore: status } : undefined);

test('no restoreFrom: no restore, no gate', () => {
  assert.deepEqual(planRestore(store(), undefined, undefined), { restore: undefined, gate: false, createJob: false });
});

test('Pending, gated, while the snapshot is missing or has not succeeded; Failed when it failed', () => {
  const missing = planRestore(restoring(undefined), undefined, undefined);
  assert.equal(missing.restore?.phase, 'Pending');
  assert.match(missing.restore?.message ?? '', /KVSnapshot snap not found/);
  assert.deepEqual([missing.gate, missing.createJob], [true, false]);
  const running = planRestore(restoring(undefined), snapshot({ phase: 'Running' }), undefined);
  assert.equal(running.restore?.phase, 'Pending');
  assert.equal(planRestore(restoring(undefined), snapshot({ phase: 'Failed' }), undefined).restore?.phase, 'Failed');
});

test('a Succeeded snapshot and no Job: create the one Job, still gated', () => {
  const p = planRestore(restoring(undefined), snapshot({ phase: 'Succeeded' }), undefined);
  assert.deepEqual([p.restore?.phase, p.gate, p.createJob], ['Running', true, true]);
  assert.equal(p.restore?.jobName, 'db-restore');
});

test('the Job decides: Running records its uid, Complete ungates, Failed stays gated', () => {
  const snap = snapshot({ phase: 'Succeeded' });
  const run = planRestore(restoring(undefined), snap, job('db-restore', 'Running'));
  assert.deepEqual(
    [run.restore?.phase, run.restore?.jobUID, run.gate, run.createJob],
    ['Running', 'job-uid', true, false],
  );
  const ok = planRestore(restoring(run.restore), snap, job('db-restore', 'Complete'));
  assert.deepEqual([ok.restore?.phase, ok.gate], ['Succeeded', false]);
  assert.equal(ok.restore?.completionTime, '2026-12-02T01:00:00Z');
  const failed = planRestore(restoring(run.restore), snap, job('db-restore', 'Failed'));
  assert.deepEqual([failed.restore?.phase, failed.gate], ['Failed', true]);
  assert.match(failed.restore?.message ?? '', /BackoffLimitExceeded/);
});

test('exactly once: a recorded Job that vanished or was replaced fails the restore, it is never re-created', () => {
  const snap = snapshot({ phase: 'Succeeded' });
  const recorded = { snapshot: 'snap', phase: 'Running' as const, jobName: 'db-restore', jobUID: 'job-uid' };
  const gone = planRestore(restoring(recorded), snap, undefined);
  assert.deepEqual([gone.restore?.phase, gone.createJob], ['Failed', false]);
  const replaced = planRestore(restoring(recorded), snap, job('db-restore', 'Running', 'other-uid'));
  assert.deepEqual([replaced.restore?.phase, replaced.createJob], ['Failed', false]);
});

test('a Succeeded or Failed restore is final, whatever the Job and snapshot do after', () => {
  const done = { snapshot: 'snap', phase: 'Succeeded' as const, jobUID: 'job-uid' };
  for (const [snap, j] of [
    [undefined, undefined],
    [snapshot({ phase: 'Failed' }), job('db-restore', 'Failed')],
  ] as const) {
    assert.deepEqual(planRestore(restoring(done), snap, j), { restore: done, gate: false, createJob: false });
  }
  const failed = { snapshot: 'snap', phase: 'Failed' as const };
  assert.deepEqual(planRestore(restoring(failed), snapshot({ phase: 'Succeeded' }), undefined), {
    restore: failed,
    gate: true,
    createJob: false,
  });
});

test("the restore Job mounts the snapshot's stored data and runs once", () => {
  const j = restoreJob(store({ restoreFrom: 'snap' }));
  assert.equal(j.metadata.name, 'db-restore');
  assert.deepEqual(j.spec?.template.spec?.volumes?.[0]?.configMap, { name: 'snap-data' });
  assert.equal(j.spec?.template.spec?.restartPolicy, 'Never');
});
