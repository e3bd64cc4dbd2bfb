/**
 * @opkit/kvstore — the KVStore reference operator: its API (KVStore, KVSnapshot, with their CEL rules), its
 * controllers and their pure plans.
 */
export { type KVSnapshot, KVSnapshots } from './api/v1alpha1/kvsnapshot.ts';
export { type KVStore, KVStores } from './api/v1alpha1/kvstore.ts';
export { permissions as snapshotPermissions, setupKVSnapshotController } from './controllers/kvsnapshot.ts';
export { permissions as storePermissions, setupKVStoreController } from './controllers/kvstore.ts';
