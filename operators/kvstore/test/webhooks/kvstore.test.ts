// The KVStore's admission on a real local control plane: the test manager serves the webhook on loopback and the
// apiserver calls it, so a write that changes replicas during a restore is refused; one that shrinks storage or
// changes restoreFrom is refused by the CRD's CEL rules. Each with the field named (an ApiError with the causes), as
// kubectl would show it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import { startTestManager } from '@opkit/runtime/testing';
import { type Environment, start } from '@opkit/testenv';
import { KVStores } from '../../src/api/v1alpha1/kvstore.ts';
import { kvstoreWebhooks } from '../../src/webhooks/kvstore.ts';
import { permissions } from '../../src/webhooks.ts';

let env: Environment;
before(async () => {
  env = await start({ nodes: 0, log: () => {} });
});
after(async () => {
  await env?.stop();
});

const options = {
  name: 'kvstore-operator',
  kinds: [KVStores],
  permissions,
  setup: () => {},
  webhooks: { admission: kvstoreWebhooks() },
};

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
  const op = await startTestManager(env, options);
  try {
    const ref = { namespace: 'default', name: 'db' };
    await op.client.create(KVStores, { metadata: ref, spec: { storage: '1Gi' } });
    const causes = await refused(op.client.patch(KVStores, ref, { spec: { storage: '500Mi' } }));
    assert.match(causes.join('\n'), /spec\.storage: .*storage cannot shrink \(it is 1Gi\)/);
    await op.client.patch(KVStores, ref, { spec: { storage: '1024Mi' } }); // the same size
    await op.client.patch(KVStores, ref, { spec: { storage: '2Gi' } });
    assert.equal((await op.client.get(KVStores, ref)).spec.storage, '2Gi');
  } finally {
    await op.stop();
  }
});

test('replicas cannot change while a restore is in progress, and can once it ended', async () => {
  const op = await startTestManager(env, options);
  try {
    const ref = { namespace: 'default', name: 'copy' };
    await op.client.create(KVStores, { metadata: ref, spec: { replicas: 2, restoreFrom: 'snap' } });
    const causes = await refused(op.client.patch(KVStores, ref, { spec: { replicas: 3 } }));
    assert.match(causes.join('\n'), /spec\.replicas: .*cannot change while the restore from snap is in progress/);
    assert.match(
      (await refused(op.client.patch(KVStores, ref, { spec: { restoreFrom: 'other' } }))).join('\n'),
      /spec\.restoreFrom/,
    );
    await op.client.patchStatus(KVStores, ref, { status: { restore: { snapshot: 'snap', phase: 'Succeeded' } } });
    await op.client.patch(KVStores, ref, { spec: { replicas: 3 } });
    assert.equal((await op.client.get(KVStores, ref)).spec.replicas, 3);
  } finally {
    await op.stop();
  }
});
