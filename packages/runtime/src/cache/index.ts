/**
 * @module @opkit/runtime/cache
 * The shared informer cache: `Cache` (one informer per kind, reads that wait for sync, typed indexes), `Informer` and
 * its `Store`, transforms that keep only what an operator reads (`keepFields`), caching by partition (`Partitioning`,
 * `byLabel`: what sharding caches each shard with), and its errors. `fieldIndex` indexes a string field by its typed path; `defineIndex` and `indexers` live in `@opkit/runtime`.
 */
export {
  Cache,
  CacheError,
  type CacheErrorCode,
  type CacheHold,
  type CacheListOptions,
  type CacheOptions,
  type ResourceCacheOptions,
} from './cache.ts';
export {
  type FieldPath,
  fieldIndex,
  type Index,
  IndexError,
  type IndexErrorCode,
  type IndexQuery,
} from './indexes.ts';
export { type EventHandler, Informer, type InformerOptions } from './informer.ts';
export { byLabel, type Partitioning, type PartitionSelectors } from './partitioning.ts';
export { type IndexFunc, Store } from './store.ts';
export { dropManagedFields, keepFields, type Transform } from './transform.ts';
