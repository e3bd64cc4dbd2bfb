import assert from 'node:assert/strict';
import { test } from 'node:test';
import { job, snapshot, store } from './fixtures.ts';
import { planSnapshot, snapshotData, snapshotJob } from './snapshot.ts';

const ready = store(
  {},
  {
    observedGeneration: 1,
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Ready', message: '', lastTransitionTime: '2026-12-02T00:00:00Z' },
    ],
  },
);

test('Pending while the store is missing or not Ready; then the Job is created and the phase is Running', () => {
  assert.match(planSnapshot(snapshot(), undefined, undefined).status.message ?? '', /KVStore db not found/);
  const notReady = planSnapshot(snapshot(), store(), undefined);
  assert.deepEqual([notReady.status.phase, notReady.createJob], ['Pending', false]);
  const start = planSnapshot(snapshot(), ready, undefined);
  assert.deepEqual([start.status.phase, start.createJob, start.status.jobName], ['Running', true, 'snap-snapshot']);
});

test('the Job decides: Running, Succeeded (and the data is written), Failed with its reason', () => {
  assert.equal(planSnapshot(snapshot(), ready, job('snap-snapshot', 'Running')).status.phase, 'Running');
  const ok = planSnapshot(snapshot(), ready, job('snap-snapshot', 'Complete'));
  assert.deepEqual(
    [ok.status.phase, ok.writeData, ok.status.dataRef, ok.status.storeVersion],
    ['Succeeded', true, 'snap-data', '1.36'],
  );
  const failed = planSnapshot(snapshot(), ready, job('snap-snapshot', 'Failed'));
  assert.deepEqual([failed.status.phase, failed.writeData], ['Failed', false]);
  assert.match(failed.status.message ?? '', /BackoffLimitExceeded/);
});

test('a Job that completed after its store was deleted still stores the snapshot', () => {
  const p = planSnapshot(snapshot(), undefined, job('snap-snapshot', 'Complete'));
  assert.deepEqual([p.status.phase, p.writeData, p.status.storeVersion], ['Succeeded', true, undefined]);
  assert.equal(snapshotData(snapshot(), undefined, job('snap-snapshot', 'Complete')).data?.store, 'db');
});

test('Succeeded and Failed are final', () => {
  for (const phase of ['Succeeded', 'Failed'] as const) {
    const p = planSnapshot(snapshot({ phase }), ready, undefined);
    assert.deepEqual([p.status.phase, p.createJob, p.writeData], [phase, false, false]);
  }
});

test("the Job: no retries, the Secret by reference, and the test hook's exit code on its pod", () => {
  const plain = snapshotJob(snapshot(), ready);
  assert.equal(plain.spec?.backoffLimit, 0);
  assert.equal(plain.spec?.template.metadata?.annotations, undefined);
  const failing = snapshotJob(snapshot(undefined, { 'kv.example.com/test-exit-code': '3' }), ready);
  assert.deepEqual(failing.spec?.template.metadata?.annotations, { 'testenv.opkit.dev/exit-code': '3' });
  assert.doesNotMatch(JSON.stringify(plain), /"value":/, 'no credential is inlined');
  const data = snapshotData(snapshot(), ready, job('snap-snapshot', 'Complete'));
  assert.deepEqual(
    [data.metadata.name, data.metadata.ownerReferences, data.data?.store],
    ['snap-data', undefined, 'db'],
  );
});
