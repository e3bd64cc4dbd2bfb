/**
 * @module sharding/labels
 * The labels of a ring's Leases: every Lease of a ring carries `opkit.dev/shard-ring: <ring>`, and
 * `opkit.dev/shard-role: member` (a replica's) or `shard` (a shard's fence). The label on sharded objects is
 * helpers/shardlabel.ts.
 */

/** The label every Lease of a ring carries (its value: the ring's name). */
export const RING_LABEL = 'opkit.dev/shard-ring';
/**
 * The label telling member Leases (`member`, or `standby` for a replica whose filter does not lead: it owns nothing,
 * and replicas of an older opkit do not count it) from fence Leases (`shard`).
 */
export const ROLE_LABEL = 'opkit.dev/shard-role';
/**
 * The annotation of a member Lease listing the members its replica judges dead (comma-separated identities): a replica
 * that joined since cannot judge them yet, and leaves them out of the owners it computes.
 */
export const DEAD_ANNOTATION = 'opkit.dev/shard-dead';
/**
 * The annotation naming a filter (`labels` or `server`, sharding/scheme.ts): on a member Lease, how its replica's
 * caches select shards; on a fence, the filter it is held under (marks.ts). A Lease without it: `labels`.
 */
export const FILTER_ANNOTATION = 'opkit.dev/shard-filter';
