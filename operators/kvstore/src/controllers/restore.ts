/**
 * @module controllers/restore
 * The restore of a KVStore created with `spec.restoreFrom`, as a pure plan. Its state is `status.restore`:
 *
 * - Pending until the snapshot has Succeeded (a snapshot that Failed fails the restore);
 * - then one Job, `<store>-restore`, is created (a fixed name: a second create after a restart answers AlreadyExists
 *   instead of making a second Job) and its uid recorded; Running until it ends;
 * - Succeeded when that Job completed, Failed when it failed or vanished before ending (never re-created: a restore
 *   never runs twice).
 *
 * Guarantees: the StatefulSet is held at 0 replicas (`gate`) until the restore Succeeded, so no pod serves before
 * the data is back; once Succeeded or Failed the restore is final, whatever happens to the Job or the snapshot.
 */
import type { Job } from '@opkit/runtime/kinds';
import type { KVSnapshot } from '../api/v1alpha1/kvsnapshot.ts';
import type { KVStore, RestoreStatus } from '../api/v1alpha1/kvstore.ts';
import { jobOutcome } from './jobs.ts';
import { imageOf, LABELS, MANAGED_BY, restoreJobName, snapshotDataName } from './names.ts';

export interface RestorePlan {
  /** The status.restore to write (undefined: no restore asked for). */
  readonly restore: RestoreStatus | undefined;
  /** Hold the StatefulSet at 0 replicas. */
  readonly gate: boolean;
  /** Create the restore Job (and record its uid). */
  readonly createJob: boolean;
}

/** The next step of a store's restore, from its status, the snapshot and the restore Job the cache has. */
export function planRestore(store: KVStore, snapshot: KVSnapshot | undefined, job: Job | undefined): RestorePlan {
  const from = store.spec.restoreFrom;
  const current = store.status?.restore;
  if (from === undefined) return { restore: current, gate: false, createJob: false };
  if (current?.phase === 'Succeeded') return { restore: current, gate: false, createJob: false };
  if (current?.phase === 'Failed') return { restore: current, gate: true, createJob: false };
  const base = { snapshot: from, jobName: restoreJobName(store) };
  const hold = (restore: RestoreStatus, createJob = false): RestorePlan => ({ restore, gate: true, createJob });
  if (job !== undefined) {
    const uid = job.metadata.uid ?? '';
    if (current?.jobUID !== undefined && current.jobUID !== uid)
      return hold({ ...base, phase: 'Failed', jobUID: current.jobUID, message: `${base.jobName} was replaced` });
    const outcome = jobOutcome(job);
    if (outcome.state === 'Succeeded')
      return {
        restore: { ...base, phase: 'Succeeded', jobUID: uid, completionTime: outcome.at },
        gate: false,
        createJob: false,
      };
    if (outcome.state === 'Failed') return hold({ ...base, phase: 'Failed', jobUID: uid, message: outcome.message });
    return hold({ ...base, phase: 'Running', jobUID: uid, message: `restoring from ${from}` });
  }
  if (current?.jobUID !== undefined)
    return hold({
      ...base,
      phase: 'Failed',
      jobUID: current.jobUID,
      message: `${base.jobName} is gone before it ended`,
    });
  if (snapshot === undefined) return hold({ ...base, phase: 'Pending', message: `KVSnapshot ${from} not found` });
  const phase = snapshot.status?.phase;
  if (phase === 'Failed') return hold({ ...base, phase: 'Failed', message: `KVSnapshot ${from} failed` });
  if (phase !== 'Succeeded')
    return hold({ ...base, phase: 'Pending', message: `waiting for KVSnapshot ${from} to succeed` });
  return hold({ ...base, phase: 'Running', message: `restoring from ${from}` }, true);
}

/** The restore Job: it reads the stored snapshot (its ConfigMap, mounted) and writes it into the store's data. */
export function restoreJob(store: KVStore): Job {
  const snapshot = store.spec.restoreFrom ?? '';
  const labels = {
    [LABELS.instance]: store.metadata.name ?? '',
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.component]: 'restore',
  };
  return {
    metadata: { name: restoreJobName(store), labels },
    spec: {
      backoffLimit: 2,
      template: {
        metadata: { labels },
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'restore',
              image: imageOf(store.spec.version),
              command: ['sh', '-c', 'test -s /snapshot/data && echo restored'], // simulated: reads what it would load
              volumeMounts: [{ name: 'snapshot', mountPath: '/snapshot', readOnly: true }],
            },
          ],
          volumes: [{ name: 'snapshot', configMap: { name: snapshotDataName(snapshot) } }],
        },
      },
    },
  };
}
