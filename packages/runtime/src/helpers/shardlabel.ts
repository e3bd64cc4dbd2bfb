/**
 * @module helpers/shardlabel
 * The label that puts an object in a bucket of a sharded operator (docs/sharding.md): `opkit.dev/shard`, a number
 * below `SHARD_BUCKETS` written in canonical form. Children carry their controller owner's value, so they land in the
 * same bucket; `shardLabelsOf(owner)` gives it to a child written by hand.
 */

/** How many buckets objects are spread over: fixed, as the label on every object names one. */
export const SHARD_BUCKETS = 32;

/** The label naming an object's bucket (`"0"` … `"31"`); children carry their controller owner's. */
export const SHARD_LABEL = 'opkit.dev/shard';

/** The bucket a label value names, or undefined when it names none (missing, not a number, out of range). */
export function bucketOfLabel(value: string | undefined): number | undefined {
  if (value === undefined || !/^(0|[1-9][0-9]?)$/.test(value)) return undefined;
  const n = Number(value);
  return n < SHARD_BUCKETS ? n : undefined;
}

/**
 * The labels a child written outside `ctx.create` / `ctx.apply` (with `ctx.rawClient`, say) must carry so that it lands
 * in its owner's bucket: `{ 'opkit.dev/shard': <the owner's> }`, or `{}` when the owner has none (not sharded).
 */
export function shardLabelsOf(owner: {
  readonly metadata: { readonly labels?: Readonly<Record<string, string>> };
}): Record<string, string> {
  const value = owner.metadata.labels?.[SHARD_LABEL];
  return value === undefined ? {} : { [SHARD_LABEL]: value };
}

/** Every bucket's label value, for a selector (`opkit.dev/shard notin (0,…,31)` finds objects without a valid one). */
export const ALL_BUCKET_VALUES: readonly string[] = Array.from({ length: SHARD_BUCKETS }, (_, b) => String(b));
