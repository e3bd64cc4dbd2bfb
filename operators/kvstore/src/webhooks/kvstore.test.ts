import assert from 'node:assert/strict';
import { test } from 'node:test';
import { store } from '../controllers/fixtures.ts';
import { restoring, validateKVStoreUpdate } from './kvstore.ts';

const fields = (r: ReturnType<typeof validateKVStoreUpdate>) => (r.errors ?? []).map((e) => `${e.type} ${e.field}`);

test('storage may grow, never shrink, compared as quantities', () => {
  assert.deepEqual(fields(validateKVStoreUpdate(store({ storage: '2Gi' }), store({ storage: '1Gi' }))), []);
  assert.deepEqual(fields(validateKVStoreUpdate(store({ storage: '1024Mi' }), store({ storage: '1Gi' }))), []);
  assert.deepEqual(fields(validateKVStoreUpdate(store({ storage: '500Mi' }), store({ storage: '1Gi' }))), [
    'Invalid spec.storage',
  ]);
  assert.deepEqual(fields(validateKVStoreUpdate(store({ storage: '1G' }), store({ storage: '1Gi' }))), [
    'Invalid spec.storage',
  ]);
});

test('replicas cannot change during a restore, and may once it ended; restoreFrom cannot change', () => {
  const during = store({ restoreFrom: 'snap' }, { restore: { snapshot: 'snap', phase: 'Running' } });
  const after = store({ restoreFrom: 'snap' }, { restore: { snapshot: 'snap', phase: 'Succeeded' } });
  assert.equal(restoring(during), true);
  assert.equal(restoring(store({ restoreFrom: 'snap' })), true, 'asked for, not started');
  assert.equal(restoring(after), false);
  const scaled = (old: typeof during) => ({ ...old, spec: { ...old.spec, replicas: 5 } });
  assert.deepEqual(fields(validateKVStoreUpdate(scaled(during), during)), ['Forbidden spec.replicas']);
  assert.deepEqual(fields(validateKVStoreUpdate(scaled(after), after)), []);
  assert.deepEqual(fields(validateKVStoreUpdate(store({ restoreFrom: 'other' }), during)), [
    'Forbidden spec.restoreFrom',
  ]);
});
