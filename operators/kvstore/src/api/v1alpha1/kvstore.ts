// scaffolded by opkit — this file is yours to edit
/**
 * @module api/v1alpha1/kvstore
 * The KVStore API (`kv.example.com/v1alpha1`): a replicated key-value store of `spec.replicas` pods, each with a
 * volume of `spec.storage` and the CPU and memory of `spec.resources`, running `spec.version`, optionally created from
 * a KVSnapshot (`spec.restoreFrom`).
 * The status says what runs (readyReplicas, currentVersion), how a restore went (`status.restore`, which is what
 * makes a restore happen once across operator restarts) and the Ready and Progressing conditions.
 */
import { Defaulted, defineKind, type ObjectOf } from '@opkit/runtime';
import { ConditionsSchema, Validated } from '@opkit/runtime/crd';
import { QuantitySchema } from '@opkit/runtime/quantity';
import { ResourceRequirementsSchema } from '@opkit/runtime/schemas/core';
import { CloneType, type Static, Type } from '@sinclair/typebox';
import { SnapshotPhase } from './kvsnapshot.ts';

export const KVStoreSpec = Validated(
  Type.Object(
    {
      replicas: Defaulted(Type.Integer({ minimum: 1, maximum: 9, format: 'int32', description: 'Pods to run.' }), 3),
      version: Defaulted(
        Type.String({
          pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$',
          description: 'The image tag every pod runs; a change rolls the pods one at a time.',
        }),
        '1.36',
      ),
      storage: Defaulted(
        Validated(
          CloneType(QuantitySchema({ description: 'The volume size of each pod (it may grow, never shrink).' }), {
            maxLength: 32,
          }),
          [
            // a transition rule: sizes compare as quantities (1Gi is 1024Mi); a volume cannot give space back
            {
              rule: 'quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0',
              messageExpression: "'storage cannot shrink (it is ' + string(oldSelf) + ')'",
            },
          ],
        ),
        '1Gi',
      ),
      // each pod's CPU and memory, a built-in type embedded whole: the apiserver validates it (quantities, claims)
      // and kubectl explain documents it with Kubernetes' own text; a change rolls the pods one at a time
      resources: Type.Optional(ResourceRequirementsSchema),
      restoreFrom: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 253,
          description: 'A KVSnapshot of this namespace to create the store from, before its pods serve.',
        }),
      ),
    },
    { description: 'The desired state of a KVStore.' },
  ),
  [
    // a transition rule (it reads oldSelf): checked on updates only
    {
      rule: 'has(self.restoreFrom) == has(oldSelf.restoreFrom) && (!has(self.restoreFrom) || self.restoreFrom == oldSelf.restoreFrom)',
      message: 'restoreFrom is set when the store is created, and cannot change',
      fieldPath: '.restoreFrom',
      reason: 'FieldValueForbidden',
    },
  ],
);

export const KVStoreStatus = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    replicas: Type.Optional(Type.Integer({ format: 'int32' })),
    readyReplicas: Type.Optional(Type.Integer({ format: 'int32' })),
    currentVersion: Type.Optional(
      Type.String({ description: 'The version every pod runs (unset during the first rollout).' }),
    ),
    restore: Type.Optional(
      Type.Object({
        snapshot: Type.String(),
        // Pending (waiting for the snapshot), Running (its Job runs), Succeeded or Failed: a Job's phases, as a snapshot's
        phase: SnapshotPhase,
        jobName: Type.Optional(Type.String()),
        jobUID: Type.Optional(Type.String({ description: 'The one restore Job: a restore never runs twice.' })),
        message: Type.Optional(Type.String()),
        completionTime: Type.Optional(Type.String({ format: 'date-time' })),
      }),
    ),
    conditions: Type.Optional(ConditionsSchema),
  },
  { description: 'The observed state of a KVStore.' },
);

export const KVStores = defineKind({
  group: 'kv.example.com',
  version: 'v1alpha1',
  kind: 'KVStore',
  plural: 'kvstores',
  shortNames: ['kvs'],
  scope: 'Namespaced',
  spec: KVStoreSpec,
  status: KVStoreStatus,
  subresources: { status: true },
  objectValidations: [
    // the name becomes a label value of what the store owns (its StatefulSet's pods, PVCs, Jobs)
    {
      rule: 'self.metadata.name.size() <= 63',
      message: 'metadata.name: at most 63 characters, it is a label value of what the store owns',
    },
    // a transition rule that reads the stored status: the restore writes a fixed set of volumes
    {
      rule: "self.spec.replicas == oldSelf.spec.replicas || !has(oldSelf.spec.restoreFrom) || oldSelf.?status.?restore.?phase.orValue('') in ['Succeeded', 'Failed']",
      messageExpression: "'cannot change while the restore from ' + oldSelf.spec.restoreFrom + ' is in progress'",
      fieldPath: '.spec.replicas',
      reason: 'FieldValueForbidden',
    },
  ],
  printerColumns: [
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyReplicas' },
    { name: 'Version', type: 'string', jsonPath: '.status.currentVersion' },
    { name: 'Status', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
});

export type KVStoreSpec = Static<typeof KVStoreSpec>;
export type KVStoreStatus = Static<typeof KVStoreStatus>;
export type RestoreStatus = NonNullable<KVStoreStatus['restore']>;
export type KVStore = ObjectOf<typeof KVStores>;
