/**
 * @module controllers/names
 * The names and labels of everything the operator makes, in one place: each is a pure function of the owner's name,
 * so a restarted operator finds what its predecessor made (a restore Job is found by name, never made twice).
 */
import type { KVSnapshot } from '../api/v1alpha1/kvsnapshot.ts';
import type { KVStore } from '../api/v1alpha1/kvstore.ts';

export const MANAGED_BY = 'kvstore-operator';
/** The image the store runs; `spec.version` is its tag (the data path is simulated: any small image does). */
export const IMAGE = 'docker.io/library/busybox';
/** The port the store serves on (the headless Service's). */
export const PORT = 6379;
/** The volumeClaimTemplate's name: the PVCs are `data-<store>-<ordinal>`. */
export const DATA_VOLUME = 'data';

export const LABELS = {
  name: 'app.kubernetes.io/name',
  instance: 'app.kubernetes.io/instance',
  managedBy: 'app.kubernetes.io/managed-by',
  component: 'app.kubernetes.io/component',
  /** On a stored snapshot's ConfigMap: the KVSnapshot it belongs to. */
  snapshot: 'kv.example.com/snapshot',
} as const;

/**
 * Test hook: a KVSnapshot annotated with this (`"1"`) gets a Job whose pod carries testenv's exit-code annotation,
 * so on testenv its pod fails with that code (docs/testenv.md, "Failing Jobs"). A real cluster ignores it.
 */
export const TEST_EXIT_CODE = 'kv.example.com/test-exit-code';
export const TESTENV_EXIT_CODE = 'testenv.opkit.dev/exit-code';

const nameOf = (o: { metadata: { name?: string } }) => o.metadata.name ?? '';

/** The labels on a store's pods (the StatefulSet's selector). */
export function selectorLabels(store: KVStore): Record<string, string> {
  return { [LABELS.name]: 'kvstore', [LABELS.instance]: nameOf(store), [LABELS.managedBy]: MANAGED_BY };
}

export const statefulSetName = nameOf;
export const serviceName = nameOf;
export const secretName = (store: KVStore) => `${nameOf(store)}-credentials`;
export const restoreJobName = (store: KVStore) => `${nameOf(store)}-restore`;
export const snapshotJobName = (snap: KVSnapshot) => `${nameOf(snap)}-snapshot`;
/** The ConfigMap that holds a snapshot's data once its Job succeeded. */
export const snapshotDataName = (snapshot: string) => `${snapshot}-data`;
export const imageOf = (version: string) => `${IMAGE}:${version}`;

/** The reference to `name` in `owner`'s namespace (a reconciled namespaced object always has one). */
export function sibling(
  owner: { metadata: { namespace?: string } },
  name: string,
): { namespace: string; name: string } {
  return { namespace: owner.metadata.namespace ?? '', name };
}
