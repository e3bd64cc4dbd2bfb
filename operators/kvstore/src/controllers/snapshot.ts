/**
 * @module controllers/snapshot
 * A KVSnapshot's Job, stored data and phase, as pure functions.
 *
 * - Pending while the store is missing, restoring or not Ready (a snapshot of a half-started store is no snapshot);
 * - Running once its Job exists; Succeeded when the Job completed, and only then the stored snapshot is written (a
 *   ConfigMap `<snapshot>-data`, not owned by the KVSnapshot, so that only its finalizer removes it); Failed when the
 *   Job failed, with the Job's reason.
 * - Succeeded and Failed are final: a snapshot is taken once (take another with a new KVSnapshot).
 *
 * The Job runs with `backoffLimit: 0`: a failed snapshot is reported at once rather than retried behind the user's
 * back. Test hook: the annotation `kv.example.com/test-exit-code` on the KVSnapshot is passed to the Job's pod as
 * testenv's `testenv.opkit.dev/exit-code`, so that on testenv the pod fails with that code.
 */
import { isConditionTrue } from '@opkit/runtime';
import type { ConfigMap, Job } from '@opkit/runtime/kinds';
import type { KVSnapshot, KVSnapshotStatus } from '../api/v1alpha1/kvsnapshot.ts';
import type { KVStore } from '../api/v1alpha1/kvstore.ts';
import { jobOutcome } from './jobs.ts';
import {
  imageOf,
  LABELS,
  MANAGED_BY,
  serviceName,
  snapshotDataName,
  snapshotJobName,
  TEST_EXIT_CODE,
  TESTENV_EXIT_CODE,
} from './names.ts';
import { credentialsEnv } from './statefulset.ts';

/** The Job that takes the snapshot of `store`. */
export function snapshotJob(snap: KVSnapshot, store: KVStore): Job {
  const labels = {
    [LABELS.snapshot]: snap.metadata.name ?? '',
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.component]: 'snapshot',
  };
  const exitCode = snap.metadata.annotations?.[TEST_EXIT_CODE];
  return {
    metadata: { name: snapshotJobName(snap), labels },
    spec: {
      backoffLimit: 0,
      template: {
        metadata: { labels, ...(exitCode !== undefined ? { annotations: { [TESTENV_EXIT_CODE]: exitCode } } : {}) },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'snapshot',
              image: imageOf(store.spec.version),
              // simulated data path: a real store would be dumped from its first pod, authenticated by the Secret
              command: ['sh', '-c', `echo snapshot of ${serviceName(store)}-0.${serviceName(store)}`],
              env: credentialsEnv(store),
            },
          ],
        },
      },
    },
  };
}

/** The stored snapshot: what the Job took, kept in a ConfigMap the finalizer removes with the KVSnapshot. */
export function snapshotData(snap: KVSnapshot, store: KVStore | undefined, job: Job): ConfigMap {
  return {
    metadata: {
      name: snapshotDataName(snap.metadata.name ?? ''),
      labels: { [LABELS.snapshot]: snap.metadata.name ?? '', [LABELS.managedBy]: MANAGED_BY },
    },
    data: {
      store: snap.spec.storeName,
      ...(store ? { version: store.spec.version, replicas: String(store.spec.replicas) } : {}),
      job: job.metadata.uid ?? '',
      data: `keys of ${snap.spec.storeName} at ${job.status?.completionTime ?? ''}`,
    },
  };
}

/** What to do next for a snapshot: its status, and whether to create the Job or write the stored data. */
export interface SnapshotPlan {
  readonly status: KVSnapshotStatus;
  readonly createJob: boolean;
  readonly writeData: boolean;
}

/** True when the store serves: Ready, and not restoring. */
function storeReady(store: KVStore): boolean {
  return (
    isConditionTrue(store.status?.conditions, 'Ready') && store.status?.observedGeneration === store.metadata.generation
  );
}

/** The next step for `snap`, from the store and the snapshot Job the cache has. */
export function planSnapshot(snap: KVSnapshot, store: KVStore | undefined, job: Job | undefined): SnapshotPlan {
  const generation = snap.metadata.generation ?? 0;
  const prev = snap.status ?? {};
  const status = (fields: KVSnapshotStatus): KVSnapshotStatus => ({
    ...prev,
    observedGeneration: generation,
    ...fields,
  });
  const phase = prev.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return { status: status({}), createJob: false, writeData: false };
  if (job !== undefined) {
    const outcome = jobOutcome(job);
    const jobName = job.metadata.name ?? '';
    if (outcome.state === 'Failed')
      return {
        status: status({ phase: 'Failed', jobName, message: outcome.message }),
        createJob: false,
        writeData: false,
      };
    if (outcome.state === 'Succeeded')
      return {
        status: status({
          phase: 'Succeeded',
          jobName,
          dataRef: snapshotDataName(snap.metadata.name ?? ''),
          ...(store ? { storeVersion: store.spec.version } : {}),
          completionTime: outcome.at,
          message: `stored in ConfigMap ${snapshotDataName(snap.metadata.name ?? '')}`,
        }),
        createJob: false,
        writeData: true,
      };
    return {
      status: status({ phase: 'Running', jobName, message: `Job ${jobName} is running` }),
      createJob: false,
      writeData: false,
    };
  }
  if (store === undefined)
    return {
      status: status({ phase: 'Pending', message: `KVStore ${snap.spec.storeName} not found` }),
      createJob: false,
      writeData: false,
    };
  if (!storeReady(store))
    return {
      status: status({ phase: 'Pending', message: `waiting for KVStore ${snap.spec.storeName} to be Ready` }),
      createJob: false,
      writeData: false,
    };
  return {
    status: status({ phase: 'Running', jobName: snapshotJobName(snap), message: 'starting' }),
    createJob: true,
    writeData: false,
  };
}
