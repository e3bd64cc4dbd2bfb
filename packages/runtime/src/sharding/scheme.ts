/**
 * @module sharding/scheme
 * How objects are put in shards, and how a replica's caches select a shard: the two filters.
 *
 * - `labels` (every apiserver): a primary object's shard is its `opkit.dev/shard` label (`"0"` … `"31"`), written by
 *   the replica that holds the shard of its key's hash (labeller.ts); children carry their owner's. Each shard is
 *   listed and watched by that label.
 * - `server` (an apiserver that serves KEP-5866 shard selectors, alpha gate `ShardedListAndWatch`): a primary
 *   object's shard is the top 5 bits of the 64-bit FNV-1a hash of its uid, the hash the apiserver computes, and each
 *   shard of a primary kind is listed and watched with `shardSelector=shardRange(object.metadata.uid, lo, hi)`: no
 *   label is written on a primary object. Children cannot be selected by their owner's uid, so they carry the label
 *   `opkit.dev/shard: u<shard>` (their owner's), written with the child itself (`ctx.create`, `ctx.apply`).
 *
 * Guarantees: a scheme's `partitioning(role)` selects exactly the objects its `shardOf` (primaries) and
 * `childShardOf` (children) put in each shard, so a replica caches and reconciles the same objects. The two filters'
 * label values are disjoint: a child labelled under one is unlabelled to the other, and is labelled again when a ring
 * switches filters (children.ts). A uid never changes, so under `server` a primary object never changes shard.
 */
import { byLabel, type Partitioning } from '../cache/partitioning.ts';
import { Leases } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, resourceId } from '../client/resource.ts';
import { messageOf, UsageError } from '../errors.ts';
import { SHARD_COUNT, SHARD_LABEL, shardOfLabel } from '../helpers/shardlabel.ts';
import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';

/** How shards are selected: by a label on every object, or by the apiserver's shard selector on the uid. */
export type ShardFilter = 'labels' | 'server';

/** One filter's rules (see the module comment). */
export interface ShardScheme {
  readonly filter: ShardFilter;
  /** Whether a primary object can change shard (by a new label): only under `labels`. */
  readonly primariesMove: boolean;
  /** The shard of a primary object, or undefined (no valid label under `labels`, or no object). */
  shardOf(obj: KubeObject | undefined): number | undefined;
  /** The shard of a child, by its label; undefined without a valid one. */
  childShardOf(obj: KubeObject | undefined): number | undefined;
  /** The label value a child of shard `b` carries. */
  labelValue(b: number): string;
  /** A label selector of the objects without a valid label of this scheme. */
  readonly unlabelled: string;
  /** How the caches of the primary and owned kinds select a shard (partition values are shard numbers). */
  partitioning(role: 'primary' | 'owned'): Partitioning;
}

const encoder = new TextEncoder();
const TWO_32 = 4_294_967_296;

/**
 * The shard the apiserver's shard selector puts `uid` in: the top 5 bits of its 64-bit FNV-1a hash. Computed on two
 * 32-bit halves (the same value as `fnv1a64`, ten times faster than BigInts for a uid): it runs for every object a
 * partition stores and every request the gate admits.
 */
export function uidShard(uid: string): number {
  // a uid is ASCII: its UTF-16 code units are its UTF-8 bytes; anything else is encoded first
  const bytes = /[^\p{ASCII}]/u.test(uid) ? encoder.encode(uid) : undefined;
  const length = bytes ? bytes.length : uid.length;
  let hi = 0xcbf29ce4;
  let lo = 0x84222325;
  for (let i = 0; i < length; i++) {
    lo = (lo ^ (bytes ? (bytes[i] as number) : uid.charCodeAt(i))) >>> 0;
    // × 0x100000001b3 = × 2^40 + × 0x1b3, modulo 2^64; every product stays below 2^53
    const low = lo * 0x1b3;
    hi = (hi * 0x1b3 + Math.floor(low / TWO_32) + ((lo << 8) >>> 0)) >>> 0;
    lo = low >>> 0;
  }
  return hi >>> 27;
}

const hex = (n: bigint) => `0x${n.toString(16).padStart(16, '0')}`;

/** The shard selector of shard `b` over object uids: `shardRange(object.metadata.uid, lo, hi)`. */
export function shardRange(b: number): string {
  const lo = BigInt(b) << 59n;
  const hi = BigInt(b + 1) << 59n;
  return `shardRange(object.metadata.uid, '${hex(lo)}', '${hex(hi)}')`;
}

/** A label partitioning whose partition values (shard numbers) are label values through `valueFor`. */
function labelled(valueFor: (b: number) => string): Partitioning {
  const by = byLabel(SHARD_LABEL);
  return {
    describe: by.describe,
    selectors: (v) => by.selectors(valueFor(Number(v))),
    has: (obj, v) => by.has(obj, valueFor(Number(v))),
  };
}

const values = (valueFor: (b: number) => string) => Array.from({ length: SHARD_COUNT }, (_, b) => valueFor(b));

const labelsPartitioning = labelled(String);
const byShardLabel = (obj: KubeObject | undefined) => shardOfLabel(obj?.metadata.labels?.[SHARD_LABEL]);

/** The `labels` filter. */
export const LABELS: ShardScheme = {
  filter: 'labels',
  primariesMove: true,
  shardOf: byShardLabel,
  childShardOf: byShardLabel,
  labelValue: String,
  unlabelled: `${SHARD_LABEL} notin (${values(String).join(',')})`,
  partitioning: () => labelsPartitioning,
};

const serverValue = (b: number) => `u${b}`;

/** A label selector of the objects with no valid shard label under either filter. */
export const NO_SHARD_LABEL = `${SHARD_LABEL} notin (${[...values(String), ...values(serverValue)].join(',')})`;
const childPartitioning = labelled(serverValue);
const primaryPartitioning: Partitioning = {
  describe: 'the shard selector on object.metadata.uid',
  selectors: (v) => ({ shardSelector: shardRange(Number(v)) }),
  has: (obj, v) => obj.metadata.uid !== undefined && uidShard(obj.metadata.uid) === Number(v),
};

/** The `server` filter. */
export const SERVER: ShardScheme = {
  filter: 'server',
  primariesMove: false,
  shardOf: (obj) => (obj?.metadata.uid ? uidShard(obj.metadata.uid) : undefined),
  childShardOf: (obj) => {
    const value = obj?.metadata.labels?.[SHARD_LABEL];
    return value?.startsWith('u') ? shardOfLabel(value.slice(1)) : undefined;
  },
  labelValue: serverValue,
  unlabelled: `${SHARD_LABEL} notin (${values(serverValue).join(',')})`,
  partitioning: (role) => (role === 'primary' ? primaryPartitioning : childPartitioning),
};

/**
 * Whether the apiserver filters lists by shard selector (its `ShardedListAndWatch` gate is on): one list of at most
 * one Lease of `namespace` (sharding lists its Leases anyway) with a selector of every uid, answered with
 * `metadata.shardInfo` only where the gate is on. (Lists of custom resources, and metadata-only lists, are filtered
 * too but do not echo it, in Kubernetes 1.37.) Rejects as the list does.
 */
export async function servesShardSelectors(client: Client, namespace: string, signal?: AbortSignal): Promise<boolean> {
  const everything = `shardRange(object.metadata.uid, '${hex(0n)}', '0x10000000000000000')`;
  const options = { namespace, pageSize: 1, shardSelector: everything, ...(signal ? { signal } : {}) };
  for await (const page of client.listPages(Leases, options)) return page.metadata.shardInfo !== undefined;
  return false;
}

/**
 * The filter of one replica's sharding: `labels` until `decide` runs at its start, and the partitioning each kind's
 * caches were given by the controllers, which follows the filter decided.
 */
export class SchemeChoice {
  #scheme: ShardScheme = LABELS;
  /** The roles each partitioned kind was given, and its partitioning. */
  readonly #kinds = new Map<string, { roles: Set<'primary' | 'owned'>; by: Partitioning }>();

  /** The scheme in force. */
  get scheme(): ShardScheme {
    return this.#scheme;
  }

  /** How the caches of `kind` in `role` are partitioned: by the scheme decided at the start (one object per kind). */
  partitioning(role: 'primary' | 'owned', kind: Kind): Partitioning {
    const id = resourceId(kind);
    const known = this.#kinds.get(id);
    if (known) {
      known.roles.add(role);
      return known.by;
    }
    const roles = new Set([role]);
    const current = () => this.#scheme.partitioning(roles.has('primary') ? 'primary' : 'owned');
    const by: Partitioning = {
      describe: 'the shards of sharding',
      selectors: (v) => current().selectors(v),
      has: (obj, v) => current().has(obj, v),
    };
    this.#kinds.set(id, { roles, by });
    return by;
  }

  /**
   * Decides the filter (see `ShardingSettings.filter`): `server` when asked for, or on `auto` where the key is `name`,
   * no kind is both a primary and an owned kind, and the apiserver serves shard selectors (asked in `namespace`).
   * Asked for and not possible: a `UsageError` (`InvalidArgument`) saying why.
   */
  async decide(
    filter: 'auto' | 'labels' | 'server',
    key: 'name' | 'namespace',
    c: {
      readonly client: Client;
      readonly namespace: string;
      readonly log: Logger;
      readonly signal: AbortSignal;
    },
  ): Promise<ShardScheme> {
    if (filter === 'labels' || (filter === 'auto' && key === 'namespace')) {
      this.#scheme = LABELS;
      return LABELS;
    }
    // a transient failure is asked again: a replica that gave up would pick another filter than its peers
    const probe = async (): Promise<boolean> => {
      for (;;) {
        try {
          return await servesShardSelectors(c.client, c.namespace, c.signal);
        } catch (err) {
          if (isApiError(err, 'BadRequest')) return false;
          if (c.signal.aborted) throw err;
          c.log.warn(
            { err: messageOf(err) },
            'sharding: cannot ask whether the apiserver serves shard selectors; again in 1 s',
          );
          await sleep(1_000, c.signal).catch(() => {});
        }
      }
    };
    const both = [...this.#kinds].find(([, k]) => k.roles.size > 1)?.[0];
    const why = async () => {
      if (both) return `${both} is both a primary and an owned kind`;
      if (!(await probe()))
        return 'the apiserver does not serve shard selectors (its ShardedListAndWatch feature gate is off, or it predates Kubernetes 1.36)';
      return undefined;
    };
    const refused = await why();
    if (refused && filter === 'server')
      throw new UsageError(
        'InvalidArgument',
        `sharding.filter: server is not possible: ${refused}; use auto or labels`,
      );
    this.#scheme = refused ? LABELS : SERVER;
    return this.#scheme;
  }
}
