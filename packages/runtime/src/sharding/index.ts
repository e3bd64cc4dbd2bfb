/**
 * @module @opkit/runtime/sharding
 * Sharding's public names, all of them (see docs/sharding.md): the settings a manager takes as
 * `ManagerOptions.sharding` (`ShardingSettings`); the label that puts every object in one of `SHARD_COUNT` shards
 * (`SHARD_LABEL`) and the labels a child written by hand must carry to land in its owner's shard (`shardLabelsOf`);
 * and the RBAC a sharded operator needs beyond its controllers' (`shardingPermissions`: its Leases, and `patch` on the
 * primary kinds for the label). Which shards a replica holds is `Manager.shards`; how its caches select them (a label,
 * or the apiserver's shard selectors, which put an object in `uidShard(uid)`) is `ShardingSettings.filter`.
 */
export { shardingPermissions } from '../helpers/rbac.ts';
export { SHARD_COUNT, SHARD_LABEL, shardLabelsOf } from '../helpers/shardlabel.ts';
export { uidShard } from './scheme.ts';
export type { ShardingSettings } from './sharded.ts';
