/**
 * @module test/restore-support
 * What the restore tests check: a snapshot to restore from, an observer of the StatefulSet that fails the test if it
 * ever has pods before the restore succeeded, and the exactly-once check (one restore Job, one pod of it, its uid the
 * one the status recorded, the store's pods created after it completed).
 */
import assert from 'node:assert/strict';
import type { Client } from '@opkit/runtime/client';
import { Jobs, Pods, StatefulSets } from '@opkit/runtime/kinds';
import type { TestManager } from '@opkit/runtime/testing';
import { KVSnapshots } from '../src/api/v1alpha1/kvsnapshot.ts';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { snapshotPhase, storeReady } from './support.ts';

/** A Ready store `src` and its Succeeded snapshot `snap`. */
export async function prepareSnapshot(op: TestManager, ns: string): Promise<void> {
  await op.client.create(KVStores, { metadata: { namespace: ns, name: 'src' }, spec: { replicas: 1 } });
  await storeReady(op, ns, 'src');
  await op.client.create(KVSnapshots, { metadata: { namespace: ns, name: 'snap' }, spec: { storeName: 'src' } });
  await snapshotPhase(op, ns, 'snap', 'Succeeded');
}

/** Polls `name`'s StatefulSet and status; `stop()` rejects if it had replicas before the restore Succeeded. */
export function observeGate(client: Client, ns: string, name: string): { stop(): Promise<void> } {
  let running = true;
  const violations: string[] = [];
  const loop = (async () => {
    while (running) {
      // the StatefulSet first: the operator records the restore before it scales, so a scaled StatefulSet read
      // before the store must find the store's restore Succeeded
      const sts = await client.getIfExists(StatefulSets, { namespace: ns, name });
      const store = await client.getIfExists(KVStores, { namespace: ns, name });
      if (store && sts && store.status?.restore?.phase !== 'Succeeded' && (sts.spec?.replicas ?? 0) > 0)
        violations.push(
          `replicas ${sts.spec?.replicas} while the restore is ${store.status?.restore?.phase ?? 'unset'}`,
        );
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      assert.deepEqual(violations, [], 'no pods before the restore succeeded');
    },
  };
}

/** One restore Job ever, with one pod, recorded in the status; the store's pods came after it completed. */
export async function checkRestoredOnce(client: Client, ns: string, name: string): Promise<void> {
  const store = await client.get(KVStores, { namespace: ns, name });
  const jobs = (
    await client.list(Jobs, {
      namespace: ns,
      labelSelector: `app.kubernetes.io/component=restore,app.kubernetes.io/instance=${name}`,
    })
  ).items;
  assert.equal(jobs.length, 1, 'one restore Job');
  const job = jobs[0];
  assert.equal(job?.metadata.uid, store.status?.restore?.jobUID);
  assert.equal(job?.status?.succeeded, 1);
  const runs = (await client.list(Pods, { namespace: ns, labelSelector: `job-name=${job?.metadata.name}` })).items;
  assert.equal(runs.length, 1, 'the restore ran once');
  const completed = Date.parse(job?.status?.completionTime ?? '');
  const pods = (
    await client.list(Pods, {
      namespace: ns,
      labelSelector: `app.kubernetes.io/name=kvstore,app.kubernetes.io/instance=${name}`,
    })
  ).items;
  assert.ok(pods.length > 0);
  for (const p of pods)
    assert.ok(
      Date.parse(p.metadata.creationTimestamp ?? '') >= completed,
      `${p.metadata.name} created after the restore`,
    );
}
