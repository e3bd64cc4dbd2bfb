/**
 * @module sharding/ring
 * Where an object belongs and which replica owns it: the pure half of sharding.
 *
 * - `shardOf(key)`: the object's shard, 0 … `SHARD_COUNT − 1`, from its key (`namespace/name`, or the namespace
 *   alone): the 64-bit FNV-1a hash, mixed (murmur3's finalizer), then its top 5 bits. The mixing matters: FNV-1a's top
 *   bits hardly depend on the last bytes, so names that differ only at the end (`web-1`, `web-2`) would share a
 *   shard.
 * - `assignShards(members)`: which member owns each shard: rendezvous hashing (each shard prefers the member with
 *   the highest hash of shard and member) with bounded loads (each member owns ⌊shards / members⌋ or one more), so
 *   the split is even within one shard and a join or a leave moves few more shards than the ones that must move.
 *
 * Guarantees: both are deterministic functions of their input — every replica that sees the same members computes
 * the same owners, whatever order it saw them in.
 */

import { SHARD_COUNT } from '../helpers/shardlabel.ts';

export { ALL_SHARD_VALUES, SHARD_COUNT, SHARD_LABEL, shardLabelsOf, shardOfLabel } from '../helpers/shardlabel.ts';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;
const encoder = new TextEncoder();

/** The 64-bit FNV-1a hash of `text`'s UTF-8 bytes. */
export function fnv1a64(text: string): bigint {
  let h = FNV_OFFSET;
  for (const byte of encoder.encode(text)) h = ((h ^ BigInt(byte)) * FNV_PRIME) & MASK64;
  return h;
}

/** murmur3's 64-bit finalizer: every input bit flips each output bit with probability about ½. */
export function mix64(h: bigint): bigint {
  let x = h;
  x = ((x ^ (x >> 33n)) * 0xff51afd7ed558ccdn) & MASK64;
  x = ((x ^ (x >> 33n)) * 0xc4ceb9fe1a85ec53n) & MASK64;
  return x ^ (x >> 33n);
}

/** The shard of an object's shard key: the top 5 bits of its mixed hash. */
export function shardOf(shardKey: string): number {
  return Number(mix64(fnv1a64(shardKey)) >> 59n);
}

/**
 * The owner of each shard (index = shard) among `members` (identities), or an empty array when there are none:
 * rendezvous hashing with bounded loads (see the module comment). Each member may own ⌊shards / members⌋ shards, and
 * the members first by the hash of their name one more, until every shard is counted; each shard in turn goes to the
 * member it ranks highest that has room left.
 */
export function assignShards(members: readonly string[], shards = SHARD_COUNT): string[] {
  const unique = [...new Set(members)].sort();
  if (unique.length === 0) return [];
  const room = new Map(unique.map((m) => [m, Math.floor(shards / unique.length)]));
  const extra = shards % unique.length;
  const byHash = [...unique].sort((x, y) => compare(score(`+${x}`), score(`+${y}`), x, y));
  for (const m of byHash.slice(0, extra)) room.set(m, (room.get(m) ?? 0) + 1);
  const owners: string[] = [];
  for (let b = 0; b < shards; b++) {
    const ranked = unique.map((m) => ({ m, s: score(`${b}\u0000${m}`) })).sort((x, y) => compare(x.s, y.s, x.m, y.m));
    const pick = ranked.find((r) => (room.get(r.m) ?? 0) > 0) ?? ranked[0];
    if (!pick) continue;
    owners.push(pick.m);
    room.set(pick.m, (room.get(pick.m) ?? 0) - 1);
  }
  return owners;
}

const score = (text: string): bigint => mix64(fnv1a64(text));

/** Higher score first; the name breaks a tie. */
function compare(a: bigint, b: bigint, x: string, y: string): number {
  if (a !== b) return a > b ? -1 : 1;
  return x < y ? -1 : 1;
}
