/**
 * @module test/support
 * The kvstore operator in-process on a real local control plane: both controllers in one test manager (as the
 * operator's ServiceAccount, with the RBAC `opkit generate` derives), its log captured at debug level so a test can
 * check what it never writes (the password), and waits on a store's and a snapshot's status.
 */
import { PassThrough } from 'node:stream';
import { getCondition } from '@opkit/runtime';
import { Namespaces } from '@opkit/runtime/kinds';
import { createLogger } from '@opkit/runtime/manager';
import { startTestManager, type TestManager } from '@opkit/runtime/testing';
import type { Environment } from '@opkit/testenv';
import { type KVSnapshot, KVSnapshots, type SnapshotPhase } from '../src/api/v1alpha1/kvsnapshot.ts';
import { type KVStore, KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { setupKVSnapshotController, permissions as snapshotPermissions } from '../src/controllers/kvsnapshot.ts';
import { setupKVStoreController, permissions as storePermissions } from '../src/controllers/kvstore.ts';

export interface Operator {
  readonly op: TestManager;
  /** Everything the manager logged so far (debug level, JSON lines). */
  log(): string;
}

/** Starts both controllers as the operator would run them. */
export async function startOperator(env: Environment): Promise<Operator> {
  let text = '';
  const sink = new PassThrough();
  sink.setEncoding('utf8').on('data', (c: string) => {
    text += c;
  });
  const op = await startTestManager(env, {
    name: 'kvstore-operator',
    kinds: [KVStores, KVSnapshots],
    permissions: [...storePermissions, ...snapshotPermissions],
    setup: (mgr) => {
      setupKVStoreController(mgr);
      setupKVSnapshotController(mgr);
    },
    log: createLogger({ level: 'debug', destination: sink }),
  });
  return { op, log: () => text };
}

export async function namespace(op: TestManager, name: string): Promise<string> {
  await op.client.create(Namespaces, { metadata: { name } });
  return name;
}

/** Waits until the store is Ready for its current generation, with `replicas` ready pods. */
export function storeReady(op: TestManager, ns: string, name: string, timeoutMs = 90_000): Promise<KVStore> {
  return op.eventually(
    `KVStore ${ns}/${name} to be Ready`,
    async () => {
      const s = await op.client.get(KVStores, { namespace: ns, name });
      const ready = getCondition(s.status?.conditions, 'Ready');
      return ready?.status === 'True' && s.status?.observedGeneration === s.metadata.generation && s;
    },
    { timeoutMs },
  );
}

/** Waits until the snapshot's phase is `phase`. */
export function snapshotPhase(
  op: TestManager,
  ns: string,
  name: string,
  phase: SnapshotPhase,
  timeoutMs = 90_000,
): Promise<KVSnapshot> {
  return op.eventually(
    `KVSnapshot ${ns}/${name} to be ${phase}`,
    async () => {
      const s = await op.client.get(KVSnapshots, { namespace: ns, name });
      return s.status?.phase === phase && s;
    },
    { timeoutMs },
  );
}
