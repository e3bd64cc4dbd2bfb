import assert from 'node:assert/strict';
import { test } from 'node:test';
import { store } from '../controllers/fixtures.ts';
import { restoring, validateKVStoreUpdate } from './kvstore.ts';

const fields = (r: ReturnType<typeof validateKVStoreUpdate>) => (r.errors ?? []).map((e) => `${e.type} ${e.field}`);

test('replicas cannot change during a restore, and may once it ended', () => {
  const during = store({ restoreFrom: 'snap' }, { restore: { snapshot: 'snap', phase: 'Running' } });
  const after = store({ restoreFrom: 'snap' }, { restore: { snapshot: 'snap', phase: 'Succeeded' } });
  assert.equal(restoring(during), true);
  assert.equal(restoring(store({ restoreFrom: 'snap' })), true, 'asked for, not started');
  assert.equal(restoring(after), false);
  const scaled = (old: typeof during) => ({ ...old, spec: { ...old.spec, replicas: 5 } });
  assert.deepEqual(fields(validateKVStoreUpdate(scaled(during), during)), ['Forbidden spec.replicas']);
  assert.deepEqual(fields(validateKVStoreUpdate(scaled(after), after)), []);
});
