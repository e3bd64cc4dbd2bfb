/**
 * @module sharding/labels
 * The labels of a ring's Leases: every Lease of a ring carries `opkit.dev/shard-ring: <ring>`, and
 * `opkit.dev/shard-role: member` (a replica's) or `shard` (a shard's fence). The label on sharded objects is
 * helpers/shardlabel.ts.
 */

/** The label every Lease of a ring carries (its value: the ring's name). */
export const RING_LABEL = 'opkit.dev/shard-ring';
/** The label telling member Leases (`member`) from fence Leases (`shard`). */
export const ROLE_LABEL = 'opkit.dev/shard-role';
/**
 * The annotation of a member Lease listing the members its replica judges dead (comma-separated identities): a replica
 * that joined since cannot judge them yet, and leaves them out of the owners it computes.
 */
export const DEAD_ANNOTATION = 'opkit.dev/shard-dead';
/**
 * The annotation of a member Lease naming how its replica's caches select shards (`labels` or `server`,
 * sharding/scheme.ts); a Lease without it is a `labels` replica's.
 */
export const FILTER_ANNOTATION = 'opkit.dev/shard-filter';
