/**
 * @module controllers/fixtures
 * Objects for the plan functions' unit tests: a KVStore, a KVSnapshot, a Job in a given state and a StatefulSet
 * with a given spec and status.
 */
import type { Job, StatefulSet } from '@opkit/runtime/kinds';
import type { KVSnapshot } from '../api/v1alpha1/kvsnapshot.ts';
import type { KVStore } from '../api/v1alpha1/kvstore.ts';
import { desiredStatefulSet } from './statefulset.ts';

export function store(spec: Partial<KVStore['spec']> = {}, status?: KVStore['status'], generation = 1): KVStore {
  return {
    apiVersion: 'kv.example.com/v1alpha1',
    kind: 'KVStore',
    metadata: { name: 'db', namespace: 'ns', uid: 'store-uid', generation },
    spec: { replicas: 3, version: '1.36', storage: '1Gi', ...spec },
    ...(status !== undefined ? { status } : {}),
  };
}

export function snapshot(status?: KVSnapshot['status'], annotations?: Record<string, string>): KVSnapshot {
  return {
    apiVersion: 'kv.example.com/v1alpha1',
    kind: 'KVSnapshot',
    metadata: {
      name: 'snap',
      namespace: 'ns',
      uid: 'snap-uid',
      generation: 1,
      ...(annotations ? { annotations } : {}),
    },
    spec: { storeName: 'db' },
    ...(status !== undefined ? { status } : {}),
  };
}

export function job(name: string, state: 'Running' | 'Complete' | 'Failed', uid = 'job-uid'): Job {
  const t = '2026-12-02T01:00:00Z';
  const conditions =
    state === 'Running'
      ? []
      : [
          {
            type: state,
            status: 'True',
            reason: state === 'Failed' ? 'BackoffLimitExceeded' : 'Completed',
            message: state === 'Failed' ? 'Job has reached the specified backoff limit' : '',
            lastTransitionTime: t,
          },
        ];
  return {
    metadata: { name, namespace: 'ns', uid },
    spec: { template: { spec: { containers: [] } } },
    status: {
      conditions,
      ...(state === 'Complete' ? { completionTime: t } : {}),
      ...(state === 'Running' ? { active: 1 } : {}),
    },
  };
}

/** The StatefulSet of `s` with `replicas`, `partition`, the image of `version`, and the given status counts. */
export function sts(
  s: KVStore,
  o: { replicas: number; partition?: number; version?: string; ready?: number; updated?: number; observed?: boolean },
): StatefulSet {
  const version = o.version !== undefined ? { ...s, spec: { ...s.spec, version: o.version } } : s;
  const base = desiredStatefulSet(version, o.replicas, o.partition ?? 0);
  return {
    ...base,
    metadata: { ...base.metadata, namespace: 'ns', uid: 'sts-uid', generation: 5 },
    status: {
      replicas: o.replicas,
      readyReplicas: o.ready ?? o.replicas,
      updatedReplicas: o.updated ?? o.replicas,
      observedGeneration: o.observed === false ? 4 : 5,
    },
  };
}
