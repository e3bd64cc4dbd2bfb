// scaffolded by opkit — this file is yours to edit
/**
 * @module api/v1alpha1/kvsnapshot
 * The KVSnapshot API (`kv.example.com/v1alpha1`): a snapshot of the KVStore `spec.storeName` (same namespace),
 * taken once by a Job. `status.phase` is Pending (waiting for the store to be Ready), Running (the Job runs),
 * Succeeded (the snapshot is stored: `status.dataRef`) or Failed (the Job failed; `status.message` says how). The
 * stored snapshot is a ConfigMap the operator writes and removes with the KVSnapshot (its finalizer).
 */
import { defineKind, type ObjectOf } from '@opkit/runtime';
import { type Static, Type } from '@sinclair/typebox';

export const KVSnapshotSpec = Type.Object(
  {
    storeName: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'The KVStore (in this namespace) to snapshot.',
      'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'storeName cannot change' }],
    }),
  },
  { description: 'The desired state of a KVSnapshot.' },
);

export const SnapshotPhase = Type.Union([
  Type.Literal('Pending'),
  Type.Literal('Running'),
  Type.Literal('Succeeded'),
  Type.Literal('Failed'),
]);

export const KVSnapshotStatus = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    phase: Type.Optional(SnapshotPhase),
    message: Type.Optional(Type.String()),
    jobName: Type.Optional(Type.String()),
    dataRef: Type.Optional(Type.String({ description: 'The ConfigMap holding the stored snapshot.' })),
    storeVersion: Type.Optional(Type.String({ description: 'The version the store ran when the snapshot was taken.' })),
    completionTime: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { description: 'The observed state of a KVSnapshot.' },
);

export const KVSnapshots = defineKind({
  group: 'kv.example.com',
  version: 'v1alpha1',
  kind: 'KVSnapshot',
  plural: 'kvsnapshots',
  shortNames: ['kvsnap'],
  scope: 'Namespaced',
  spec: KVSnapshotSpec,
  status: KVSnapshotStatus,
  subresources: { status: true },
  printerColumns: [
    { name: 'Store', type: 'string', jsonPath: '.spec.storeName' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
});

export type KVSnapshotSpec = Static<typeof KVSnapshotSpec>;
export type KVSnapshotStatus = Static<typeof KVSnapshotStatus>;
export type SnapshotPhase = Static<typeof SnapshotPhase>;
export type KVSnapshot = ObjectOf<typeof KVSnapshots>;
