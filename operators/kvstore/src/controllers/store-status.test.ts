import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getCondition } from '@opkit/runtime';
import { store, sts } from './fixtures.ts';
import { planRestore } from './restore.ts';
import { planRollout } from './statefulset.ts';
import { storeStatus } from './store-status.ts';

const noRestore = { restore: undefined, gate: false, createJob: false };

test('Ready and Progressing=False/Complete once converged; currentVersion and observedGeneration recorded', () => {
  const s = store({}, undefined, 7);
  const set = sts(s, { replicas: 3 });
  const status = storeStatus(s, set, noRestore, planRollout(s, set, 3));
  assert.deepEqual([status.observedGeneration, status.readyReplicas, status.currentVersion], [7, 3, '1.36']);
  assert.equal(getCondition(status.conditions, 'Ready')?.status, 'True');
  assert.equal(getCondition(status.conditions, 'Progressing')?.reason, 'Complete');
  assert.equal(getCondition(status.conditions, 'Ready')?.observedGeneration, 7);
});

test('a rollout is Progressing (RollingUpdate), not Ready, and keeps the old currentVersion', () => {
  const s = store({ version: '1.37' }, { currentVersion: '1.36' });
  const set = sts(s, { replicas: 3, partition: 2, updated: 1 });
  const status = storeStatus(s, set, noRestore, planRollout(s, set, 3));
  assert.equal(status.currentVersion, '1.36');
  assert.equal(getCondition(status.conditions, 'Ready')?.status, 'False');
  assert.equal(getCondition(status.conditions, 'Progressing')?.reason, 'RollingUpdate');
});

test('a restore in progress is Restoring; a failed one is RestoreFailed, not Progressing', () => {
  const s = store({ restoreFrom: 'snap' });
  const pending = storeStatus(s, sts(s, { replicas: 0 }), planRestore(s, undefined, undefined), undefined);
  assert.equal(getCondition(pending.conditions, 'Ready')?.reason, 'Restoring');
  assert.equal(pending.restore?.phase, 'Pending');
  const failed = {
    restore: { snapshot: 'snap', phase: 'Failed' as const, message: 'x' },
    gate: true,
    createJob: false,
  };
  const status = storeStatus(s, undefined, failed, undefined);
  assert.equal(getCondition(status.conditions, 'Ready')?.reason, 'RestoreFailed');
  assert.equal(getCondition(status.conditions, 'Progressing')?.status, 'False');
});

test('the status never holds anything of the Secret', () => {
  const s = store();
  const text = JSON.stringify(storeStatus(s, sts(s, { replicas: 3 }), noRestore, undefined));
  assert.doesNotMatch(text, /password|credentials/);
});

test('VolumesResized: True while every volume requests spec.storage, False with the refusal', () => {
  const s = store();
  const set = sts(s, { replicas: 3 });
  const ok = storeStatus(s, set, noRestore, planRollout(s, set, 3));
  assert.equal(getCondition(ok.conditions, 'VolumesResized')?.status, 'True');
  const refused = storeStatus(s, set, noRestore, planRollout(s, set, 3), { refused: 'data-db-0 cannot grow' });
  const c = getCondition(refused.conditions, 'VolumesResized');
  assert.deepEqual([c?.status, c?.reason, c?.message], ['False', 'ExpansionRefused', 'data-db-0 cannot grow']);
});
