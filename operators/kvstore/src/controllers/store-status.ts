/**
 * @module controllers/store-status
 * A KVStore's status from what was observed, as a pure function: replicas and readyReplicas from the StatefulSet,
 * `currentVersion` (moved only once a rollout converged), `restore`, and the conditions — Ready (every pod of the
 * current version Ready, the restore done), Progressing (a restore, rollout or scale under way) and VolumesResized
 * (False when a PVC could not grow to `spec.storage`) — each with the
 * generation it describes. It never holds anything of the credentials Secret.
 */
import { type Condition, setCondition } from '@opkit/runtime';
import type { StatefulSet } from '@opkit/runtime/kinds';
import type { KVStore, KVStoreStatus } from '../api/v1alpha1/kvstore.ts';
import type { RestorePlan } from './restore.ts';
import type { RolloutPlan } from './statefulset.ts';

type Reason = 'Ready' | 'Restoring' | 'RestoreFailed' | 'RollingUpdate' | 'Scaling' | 'Creating';

function reasonOf(store: KVStore, restore: RestorePlan, rollout: RolloutPlan | undefined): Reason {
  if (restore.restore?.phase === 'Failed') return 'RestoreFailed';
  if (restore.gate) return 'Restoring';
  if (rollout === undefined) return 'Creating';
  if (rollout.rolling) return 'RollingUpdate';
  return rollout.converged ? 'Ready' : store.status?.readyReplicas === undefined ? 'Creating' : 'Scaling';
}

const MESSAGES: Record<Reason, (s: KVStore, ready: number, restore: RestorePlan) => string> = {
  Ready: (s) => `${s.spec.replicas} pods of version ${s.spec.version} are ready`,
  Restoring: (_s, _r, p) => p.restore?.message ?? 'restoring',
  RestoreFailed: (_s, _r, p) => p.restore?.message ?? 'the restore failed',
  RollingUpdate: (s, r) => `rolling out version ${s.spec.version} one pod at a time (${r} of ${s.spec.replicas} ready)`,
  Scaling: (s, r) => `${r} of ${s.spec.replicas} pods ready`,
  Creating: (s) => `creating ${s.spec.replicas} pods`,
};

/** How the volumes' resize went: `refused` says why a PVC could not grow (its StorageClass cannot expand it). */
export interface VolumesState {
  readonly refused?: string;
}

/** The status to write (see the module comment). */
export function storeStatus(
  store: KVStore,
  sts: StatefulSet | undefined,
  restore: RestorePlan,
  rollout: RolloutPlan | undefined,
  volumes: VolumesState = {},
): KVStoreStatus {
  const generation = store.metadata.generation ?? 0;
  const ready = sts?.status?.readyReplicas ?? 0;
  const reason = reasonOf(store, restore, rollout);
  const message = MESSAGES[reason](store, ready, restore);
  let conditions: Condition[] = store.status?.conditions ?? [];
  const set = (type: string, status: 'True' | 'False', why: string) => {
    conditions = setCondition(conditions, {
      type,
      status,
      reason: why,
      message,
      observedGeneration: generation,
    }).conditions;
  };
  set('Ready', reason === 'Ready' ? 'True' : 'False', reason);
  const settled = reason === 'Ready' || reason === 'RestoreFailed';
  set('Progressing', settled ? 'False' : 'True', reason === 'Ready' ? 'Complete' : reason);
  const resized = volumes.refused === undefined;
  conditions = setCondition(conditions, {
    type: 'VolumesResized',
    status: resized ? 'True' : 'False',
    reason: resized ? 'AsRequested' : 'ExpansionRefused',
    message: volumes.refused ?? `every volume requests ${store.spec.storage}`,
    observedGeneration: generation,
  }).conditions;
  const currentVersion = rollout?.converged ? store.spec.version : store.status?.currentVersion;
  return {
    observedGeneration: generation,
    replicas: sts?.status?.replicas ?? 0,
    readyReplicas: ready,
    ...(currentVersion !== undefined ? { currentVersion } : {}),
    ...(restore.restore !== undefined ? { restore: restore.restore } : {}),
    conditions,
  };
}
