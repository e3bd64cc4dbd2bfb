/**
 * @module @opkit/runtime/cache
 * The shared informer cache: `Cache` (one informer per kind, reads that wait for sync, typed indexes), `Informer` and
 * its `Store`. `defineIndex` and `indexers` live in `@opkit/runtime`.
 */
export {
  Cache,
  type CacheListOptions,
  type CacheOptions,
  dropManagedFields,
  type ResourceCacheOptions,
} from './cache.ts';
export { type Index, IndexError, type IndexQuery } from './indexes.ts';
export { type EventHandler, Informer, type InformerOptions } from './informer.ts';
export { type IndexFunc, Store } from './store.ts';
