/**
 * @module helpers/shardlabel
 * The label that puts an object in a shard of a sharded operator (docs/sharding.md): `opkit.dev/shard`, a number
 * below `SHARD_COUNT` written in canonical form. Children carry their controller owner's value, so they land in the
 * same shard; `shardLabelsOf(owner)` gives it to a child written by hand. (Where the apiserver filters primary objects
 * by the uid's hash, `filter: 'server'`, only children carry it, as `u<shard>`: `ctx.shardLabels` gives it.)
 */

/** How many shards objects are spread over: fixed, as the label on every object names one. */
export const SHARD_COUNT = 32;

/** The label naming an object's shard (`"0"` … `"31"`); children carry their controller owner's. */
export const SHARD_LABEL = 'opkit.dev/shard';

/** The shard a label value names, or undefined when it names none (missing, not a number, out of range). */
export function shardOfLabel(value: string | undefined): number | undefined {
  if (value === undefined || !/^(0|[1-9][0-9]?)$/.test(value)) return undefined;
  const n = Number(value);
  return n < SHARD_COUNT ? n : undefined;
}

/**
 * The labels a child written outside `ctx.create` / `ctx.apply` (with `ctx.rawClient`, say) must carry so that it lands
 * in its owner's shard, under the `labels` filter: `{ 'opkit.dev/shard': <the owner's> }`, or `{}` when the owner has
 * none (not sharded). In a reconcile, `ctx.shardLabels` is the answer under either filter.
 */
export function shardLabelsOf(owner: {
  readonly metadata: { readonly labels?: Readonly<Record<string, string>> };
}): Record<string, string> {
  const value = owner.metadata.labels?.[SHARD_LABEL];
  return value === undefined ? {} : { [SHARD_LABEL]: value };
}

/** Every shard's label value, for a selector (`opkit.dev/shard notin (0,…,31)` finds objects without a valid one). */
export const ALL_SHARD_VALUES: readonly string[] = Array.from({ length: SHARD_COUNT }, (_, b) => String(b));
