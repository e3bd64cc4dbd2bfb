/**
 * @module sharding/labels
 * The labels of a ring's Leases: every Lease of a ring carries `opkit.dev/shard-ring: <ring>`, and
 * `opkit.dev/shard-role: member` (a replica's) or `shard` (a bucket's fence).
 */

/** The label every Lease of a ring carries (its value: the ring's name). */
export const RING_LABEL = 'opkit.dev/shard-ring';
/** The label telling member Leases (`member`) from fence Leases (`shard`). */
export const ROLE_LABEL = 'opkit.dev/shard-role';
