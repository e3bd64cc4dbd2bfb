// scaffolded by opkit — this file is yours to edit
/**
 * The chaos scenario of a restore (`opkit chaos`, docs/chaos.md): a store, a snapshot of it, a second store restored
 * from the snapshot, then everything deleted. Its invariant is the operator's promise: a restore runs exactly once,
 * whatever crash, stale view or pause a trial puts between its writes — so the operator never creates more Jobs than
 * one per snapshot and one per restored store.
 */
import type { ChaosInvariant, ChaosScenario } from '@opkit/testenv/chaos';

const KV = 'kv.example.com/v1alpha1';
const store = (name: string, restoreFrom?: string) => ({
  apiVersion: KV,
  kind: 'KVStore',
  metadata: { name },
  spec: { replicas: 1, version: '1.36', storage: '1Gi', ...(restoreFrom ? { restoreFrom } : {}) },
});
const snapshot = { apiVersion: KV, kind: 'KVSnapshot', metadata: { name: 'nightly' }, spec: { storeName: 'orders' } };

export const scenarios: ChaosScenario[] = [
  {
    name: 'restore',
    steps: [
      { apply: store('orders') },
      { apply: snapshot },
      { apply: store('orders-copy', 'nightly') },
      { delete: { apiVersion: KV, kind: 'KVStore', name: 'orders-copy' } },
      { delete: { apiVersion: KV, kind: 'KVSnapshot', name: 'nightly' } },
      { delete: { apiVersion: KV, kind: 'KVStore', name: 'orders' } },
    ],
  },
];

export const invariants: ChaosInvariant[] = [
  {
    name: 'restore-once',
    check({ writes, namespace }) {
      const jobs = writes.filter(
        (w) => w.info.verb === 'create' && w.info.resource === 'jobs' && w.info.namespace === namespace,
      );
      // one snapshot Job and one restore Job in all: a second of either ran it twice
      return jobs.length > 2 ? [`${jobs.length} Jobs were created; a snapshot and a restore make 2, each once`] : [];
    },
  },
];
