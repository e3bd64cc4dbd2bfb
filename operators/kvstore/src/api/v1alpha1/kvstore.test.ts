// The KVStore's CEL rules, evaluated offline with the apiserver's own code (@opkit/testenv/cel): no cluster.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadValidator } from '@opkit/testenv/cel';
import { KVStores } from './kvstore.ts';

const store = (spec: Record<string, unknown>) => ({
  apiVersion: 'kv.example.com/v1alpha1',
  kind: 'KVStore',
  metadata: { name: 'db', namespace: 'default', resourceVersion: '1' }, // an update needs one, as in the cluster
  spec,
});

test('the CRD is one the apiserver accepts: every rule compiles and is within the cost budget', async () => {
  assert.deepEqual((await loadValidator()).checkCrd(KVStores).problems, []);
});

test('storage may grow, never shrink, compared as quantities', async () => {
  const v = await loadValidator();
  const resize = (from: string | number, to: string | number) =>
    v.update(KVStores, store({ storage: to }), store({ storage: from }));
  assert.equal(resize('1Gi', '2Gi').allowed, true);
  assert.equal(resize('1Gi', '1024Mi').allowed, true, 'the same size');
  assert.equal(resize('1Gi', 2 ** 31).allowed, true, 'an integer is a count of bytes');
  const shrunk = resize('1Gi', '500Mi');
  assert.equal(
    shrunk.status?.message,
    'KVStore.kv.example.com "db" is invalid: spec.storage: Invalid value: "500Mi": storage cannot shrink (it is 1Gi)',
  );
  assert.equal(resize('1Gi', '1G').allowed, false, '1G is less than 1Gi');
});

test('restoreFrom is set on create and cannot change, be added or be removed', async () => {
  const v = await loadValidator();
  assert.equal(v.create(KVStores, store({ restoreFrom: 'snap' })).allowed, true);
  for (const [from, to] of [
    ['snap', 'other'],
    [undefined, 'snap'],
    ['snap', undefined],
  ] as const) {
    const r = v.update(
      KVStores,
      store({ ...(to ? { restoreFrom: to } : {}) }),
      store({ ...(from ? { restoreFrom: from } : {}) }),
    );
    assert.deepEqual(
      r.causes.map((c) => `${c.reason} ${c.field}`),
      ['FieldValueForbidden spec.restoreFrom'],
      `${from} → ${to}`,
    );
  }
});
