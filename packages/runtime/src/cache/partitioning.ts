/**
 * @module cache/partitioning
 * How a partitioned informer splits its resource: each partition (a string value) is listed and watched apart with
 * its own selectors (a label selector, or a shard selector the apiserver filters by hash), and `has` says which
 * partition a stored object belongs to. Sharding makes them (sharding/scheme.ts); `byLabel` is the plain case.
 *
 * Guarantees: `has(obj, value)` is true exactly for the objects the selectors of `value` select, so a relist of a
 * partition replaces only its own objects and a partition removed leaves no object behind. (A cache transform must
 * keep what `has` reads — the labels, the uid — as the default transforms do.)
 */
import type { KubeObject } from '../client/resource.ts';

/** The selectors of one partition's list and watch, added to the informer's own. */
export interface PartitionSelectors {
  /** A label selector term, joined to the informer's own with `,`. */
  readonly labelSelector?: string;
  /** A shard selector (KEP-5866 `shardRange(…)`), sent as `shardSelector`. */
  readonly shardSelector?: string;
}

/** How a partitioned informer selects its partitions (see the module comment). */
export interface Partitioning {
  /** What it partitions by, for messages: `the label opkit.dev/shard`. */
  readonly describe: string;
  /** The selectors that list and watch partition `value`. */
  selectors(value: string): PartitionSelectors;
  /** Whether `obj` belongs to partition `value`. */
  has(obj: KubeObject, value: string): boolean;
}

/** Partitions by the value of one label: partition `v` is the objects labelled `label=v`. */
export function byLabel(label: string): Partitioning {
  return {
    describe: `the label ${label}`,
    selectors: (value) => ({ labelSelector: `${label}=${value}` }),
    has: (obj, value) => obj.metadata.labels?.[label] === value,
  };
}
