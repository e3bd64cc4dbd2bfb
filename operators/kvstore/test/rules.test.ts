// The KVStore's CEL rules on a real local control plane, with no webhook: the apiserver refuses a write that shrinks
// storage, changes restoreFrom, changes replicas during a restore or names a store longer than a label value, with the
// field named (an ApiError with the causes), as kubectl would show it; what is allowed goes through.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import type { Client } from '@opkit/runtime/client';
import { startTestManager, type TestManager } from '@opkit/runtime/testing';
import { type Environment, start } from '@opkit/testenv';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';

let env: Environment;
let op: TestManager;
let client: Client;
before(async () => {
  env = await start({ nodes: 0, log: () => {} });
  // the CRD installed and Established, as the operator's install makes it; no controller, no webhook
  op = await startTestManager(env, { name: 'kvstore-operator', kinds: [KVStores], permissions: [], setup: () => {} });
  client = op.client;
});
after(async () => {
  await op?.stop();
  await env?.stop();
});

/** The field causes of a refused write. */
async function refused(write: Promise<unknown>): Promise<string[]> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, `refused: ${String(err)}`);
  return err.causes.map((c) => `${c.field}: ${c.message}`);
}

test('storage may grow, never shrink; sizes compare as quantities', async () => {
  const ref = { namespace: 'default', name: 'db' };
  await client.create(KVStores, { metadata: ref, spec: { storage: '1Gi' } });
  const causes = await refused(client.patch(KVStores, ref, { spec: { storage: '500Mi' } }));
  assert.deepEqual(causes, ['spec.storage: Invalid value: "500Mi": storage cannot shrink (it is 1Gi)']);
  await client.patch(KVStores, ref, { spec: { storage: '1024Mi' } }); // the same size
  await client.patch(KVStores, ref, { spec: { storage: '2Gi' } });
  assert.equal((await client.get(KVStores, ref)).spec.storage, '2Gi');
});

test('replicas cannot change while a restore is in progress, and can once it ended; restoreFrom cannot change', async () => {
  const ref = { namespace: 'default', name: 'copy' };
  await client.create(KVStores, { metadata: ref, spec: { replicas: 2, restoreFrom: 'snap' } });
  assert.deepEqual(await refused(client.patch(KVStores, ref, { spec: { replicas: 3 } })), [
    'spec.replicas: Forbidden: cannot change while the restore from snap is in progress',
  ]);
  assert.deepEqual(await refused(client.patch(KVStores, ref, { spec: { restoreFrom: 'other' } })), [
    'spec.restoreFrom: Forbidden: restoreFrom is set when the store is created, and cannot change',
  ]);
  await client.patchStatus(KVStores, ref, { status: { restore: { snapshot: 'snap', phase: 'Succeeded' } } });
  await client.patch(KVStores, ref, { spec: { replicas: 3 } });
  assert.equal((await client.get(KVStores, ref)).spec.replicas, 3);
});

test('a name longer than 63 characters (a label value of what the store owns) is refused', async () => {
  const name = 'x'.repeat(64);
  const causes = await refused(client.create(KVStores, { metadata: { namespace: 'default', name }, spec: {} }));
  assert.deepEqual(causes, [
    '<nil>: Invalid value: metadata.name: at most 63 characters, it is a label value of what the store owns',
  ]);
});
