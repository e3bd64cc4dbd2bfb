/**
 * @module controllers/statefulset
 * The store's StatefulSet, Service and Secret as pure functions, and the partitioned rollout of a version change.
 *
 * Rollout (the StatefulSet's `RollingUpdate` with a `partition`, driven by the operator): a new version or new
 * resources (compared by value: `0.5` is `500m`) set the pod template's container and raise the partition to the
 * replica count, so no pod changes yet; then, one step per
 * reconcile, the partition is lowered by one only when the StatefulSet controller has seen the last change
 * (`observedGeneration`), every pod at or above the partition runs the new revision (`updatedReplicas`) and every pod
 * is Ready. The StatefulSet controller replaces the pods from the highest ordinal down, so exactly one pod is
 * replaced at a time, and none while another is not Ready. A change in the middle of a rollout starts it over from
 * the top.
 */
import type { MergePatch } from '@opkit/runtime/controller';
import { type EventOptions, objectReference } from '@opkit/runtime/helpers';
import {
  type EnvVar,
  type ResourceRequirements,
  type Secret,
  type Service,
  type StatefulSet,
  StatefulSets,
} from '@opkit/runtime/kinds';
import { Quantity } from '@opkit/runtime/quantity';
import type { KVStore } from '../api/v1alpha1/kvstore.ts';
import { DATA_VOLUME, imageOf, PORT, secretName, selectorLabels, serviceName, statefulSetName } from './names.ts';

/** The headless Service that gives each pod its DNS name (`<store>-<ordinal>.<store>`). */
export function desiredService(store: KVStore): Service {
  return {
    metadata: { name: serviceName(store), labels: selectorLabels(store) },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: selectorLabels(store),
      ports: [{ name: 'kv', port: PORT, targetPort: PORT }],
    },
  };
}

/** The credentials Secret: made once with `password` and immutable; never updated, logged or reported. */
export function desiredSecret(store: KVStore, password: string): Secret {
  return {
    metadata: { name: secretName(store), labels: selectorLabels(store) },
    type: 'Opaque',
    immutable: true,
    stringData: { username: 'kv', password },
  };
}

/** The StatefulSet of a store: `replicas` pods, one PVC each from the volumeClaimTemplate, rolled out above `partition`. */
export function desiredStatefulSet(store: KVStore, replicas: number, partition = 0): StatefulSet {
  const labels = selectorLabels(store);
  return {
    metadata: { name: statefulSetName(store), labels },
    spec: {
      replicas,
      serviceName: serviceName(store),
      selector: { matchLabels: labels },
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition } },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'kv',
              image: imageOf(store.spec.version),
              command: ['sh', '-c', `exec nc -lk -p ${PORT} -e cat`], // simulated data path: any small image does
              ports: [{ name: 'kv', containerPort: PORT }],
              env: credentialsEnv(store),
              volumeMounts: [{ name: DATA_VOLUME, mountPath: '/data' }],
              readinessProbe: { tcpSocket: { port: PORT }, periodSeconds: 5 },
              ...(store.spec.resources !== undefined ? { resources: store.spec.resources } : {}),
            },
          ],
        },
      },
      volumeClaimTemplates: [
        {
          metadata: { name: DATA_VOLUME, labels },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: store.spec.storage } } },
        },
      ],
    },
  };
}

/** What to do with an existing StatefulSet. */
export interface RolloutPlan {
  /** The merge patch to send (undefined: nothing to change). */
  readonly patch: MergePatch<StatefulSet> | undefined;
  /** A version change is rolling out (the partition is above 0 or about to be raised). */
  readonly rolling: boolean;
  /** The partition step taken, for the Event (`from` → `to`). */
  readonly step: { readonly from: number; readonly to: number } | undefined;
  /** Every pod runs `spec.version` and is Ready, and the StatefulSet controller saw the last change. */
  readonly converged: boolean;
}

/** The image the StatefulSet's pod template runs. */
export function templateImage(sts: StatefulSet): string | undefined {
  return sts.spec?.template.spec?.containers[0]?.image;
}

/**
 * Whether two containers' resources are the same: the same names in `requests` and `limits`, each the same quantity
 * by value (the apiserver stores `0.5` as `500m`, `1024Mi` as `1Gi`), and the same `claims`.
 */
export function sameResources(a: ResourceRequirements | undefined, b: ResourceRequirements | undefined): boolean {
  const sameList = (x: Record<string, string | number> = {}, y: Record<string, string | number> = {}) => {
    const keys = Object.keys(x);
    if (keys.length !== Object.keys(y).length) return false;
    return keys.every(
      (k) => y[k] !== undefined && Quantity.parse(x[k] as string | number).equals(y[k] as string | number),
    );
  };
  const claims = (r: ResourceRequirements | undefined) => JSON.stringify(r?.claims ?? []);
  return sameList(a?.requests, b?.requests) && sameList(a?.limits, b?.limits) && claims(a) === claims(b);
}

/** The next step for `sts` toward `replicas` pods of `store.spec.version` and `spec.resources` (see the module comment). */
export function planRollout(store: KVStore, sts: StatefulSet, replicas: number): RolloutPlan {
  const image = imageOf(store.spec.version);
  const resources = store.spec.resources;
  const current = sts.spec?.replicas ?? 0;
  const partition = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
  const s = sts.status;
  const seen = (s?.observedGeneration ?? 0) >= (sts.metadata.generation ?? 0);
  const ready = s?.readyReplicas ?? 0;
  const updated = s?.updatedReplicas ?? 0;
  const spec = (fields: { replicas?: number; partition?: number; image?: string }): MergePatch<StatefulSet> => ({
    spec: {
      ...(fields.replicas !== undefined ? { replicas: fields.replicas } : {}),
      ...(fields.partition !== undefined
        ? { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: fields.partition } } }
        : {}),
      ...(fields.image !== undefined ? { template: { spec: { containers: [newContainer(fields.image)] } } } : {}),
    },
  });
  // the whole container: a merge patch replaces the list; resources left out of the spec are left out of the pods
  const newContainer = (img: string) => {
    const { resources: _old, ...rest } = container(sts);
    return { ...rest, image: img, ...(resources !== undefined ? { resources } : {}) };
  };
  if (templateImage(sts) !== image || !sameResources(container(sts).resources, resources)) {
    // a new pod template: raise the partition first, so that no pod changes until the operator lowers it
    const top = Math.max(current, replicas);
    return { patch: spec({ image, partition: top, replicas }), rolling: true, step: undefined, converged: false };
  }
  const scale = current !== replicas ? { replicas } : {};
  if (partition > 0) {
    const stepOk = seen && ready >= current && updated >= current - partition && current === replicas;
    if (stepOk) {
      const to = Math.min(partition - 1, replicas);
      return {
        patch: spec({ ...scale, partition: to }),
        rolling: true,
        step: { from: partition, to },
        converged: false,
      };
    }
    return { patch: current !== replicas ? spec(scale) : undefined, rolling: true, step: undefined, converged: false };
  }
  const converged = seen && current === replicas && ready === replicas && updated === replicas;
  return { patch: current !== replicas ? spec(scale) : undefined, rolling: false, step: undefined, converged };
}

/** The Event of one rollout step: the pod it replaces, the version and the partition's move. */
export interface StepEvent {
  readonly reason: 'RollingUpdate';
  readonly note: string;
  readonly options: EventOptions;
}

/**
 * The Event of the rollout step `step` of `store`, taken by a patch that left the StatefulSet as `patched`. Its
 * `related` object is that StatefulSet at its new resourceVersion, so each step is an Event of its own: the recorder
 * keys a series as client-go does (action, reason, regarding and related, not the note), and the store's own
 * resourceVersion stays the same across steps when its status did not change between them.
 */
export function stepEvent(store: KVStore, step: NonNullable<RolloutPlan['step']>, patched: StatefulSet): StepEvent {
  return {
    reason: 'RollingUpdate',
    note: `pod ${statefulSetName(store)}-${step.to} → version ${store.spec.version} (partition ${step.from} → ${step.to})`,
    options: { action: 'LowerPartition', related: objectReference(StatefulSets, patched) },
  };
}

/** The pod template's container, whole: a merge patch replaces the containers list, so it must carry all of it. */
function container(sts: StatefulSet) {
  return sts.spec?.template.spec?.containers[0] ?? { name: 'kv' };
}

/** The store's credentials as environment variables, from its Secret (never the values themselves). */
export function credentialsEnv(store: KVStore): EnvVar[] {
  const secret = (key: string) => ({ secretKeyRef: { name: secretName(store), key } });
  return [
    { name: 'KV_USERNAME', valueFrom: secret('username') },
    { name: 'KV_PASSWORD', valueFrom: secret('password') },
  ];
}
