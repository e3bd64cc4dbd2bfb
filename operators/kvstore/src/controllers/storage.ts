/**
 * @module controllers/storage
 * Growing a store's volumes. A StatefulSet's volumeClaimTemplates cannot change, so a larger `spec.storage` is
 * applied to each existing PVC (`data-<store>-<ordinal>`) as a larger request, which the cluster expands if its
 * StorageClass allows it (`allowVolumeExpansion`) — as a user would with `kubectl patch pvc`. A PVC whose request is
 * already at least `spec.storage` is left alone (compared as quantities: `1Gi` is `1024Mi`); the CRD's transition
 * rule refuses a smaller size, so nothing ever shrinks. Pods added later get the template's size first, then grow the
 * same way.
 */
import type { PersistentVolumeClaim } from '@opkit/runtime/kinds';
import { Quantity } from '@opkit/runtime/quantity';
import type { KVStore } from '../api/v1alpha1/kvstore.ts';
import { DATA_VOLUME, statefulSetName } from './names.ts';

/** The store's PVCs (`data-<store>-<n>`) whose storage request is smaller than `spec.storage`. */
export function pvcsToGrow(store: KVStore, pvcs: readonly PersistentVolumeClaim[]): PersistentVolumeClaim[] {
  const prefix = `${DATA_VOLUME}-${statefulSetName(store)}-`;
  const want = Quantity.parse(store.spec.storage);
  return pvcs.filter((pvc) => {
    const name = pvc.metadata.name ?? '';
    if (!name.startsWith(prefix) || !/^\d+$/.test(name.slice(prefix.length)) || pvc.metadata.deletionTimestamp)
      return false;
    const has = pvc.spec?.resources?.requests?.storage;
    return has === undefined || want.cmp(has) > 0;
  });
}
