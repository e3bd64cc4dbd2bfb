/**
 * @module sharding/moves
 * Objects that change shard while this replica holds the shard they leave or enter: an owner relabelled (by hand, or
 * by a full update that dropped its label), or a child whose label a full update dropped. Each such move is one
 * object, one replica, and an owner with its children in one shard, again. Under the `server` filter (scheme.ts) an
 * owner's shard is its uid's: owners never move, only children do.
 *
 * Guarantees:
 * - An owner (a primary object) that leaves a shard held here for one that is not has its reconcile aborted as soon
 *   as the cache sees it (gate.ts `left`). Its children this replica caches — still in the shard it left, which this
 *   replica holds — follow it: a label patch each, asked of the gate right before it is sent, so the new holder finds
 *   them and makes none again. Where it went is read from the apiserver (a GET) when the cache saw it only leave.
 * - An owner that arrives in a held shard after that shard's list, not by this replica's own labelling of a new
 *   object, is held back for `holdMs` (gate.ts `arrived`): the old holder's bound for aborting and moving its children.
 * - A child that leaves a held shard while it still exists gets its owner's shard label back, and its owner never
 *   sees it missing and makes it again: the owner's new reconciles are held back from the moment the cache sees the
 *   child leave until it is cached again (or `settleMs` passed), and one under way is aborted once a GET shows the
 *   child still exists. (So a reconcile that lists its children in the instant of that GET can still miss it.) A
 *   child being deleted (`deletionTimestamp` set) is let go at once; one the GET finds gone — the owner's own delete,
 *   say — releases its owner then, its reconcile untouched.
 * Costs: a GET for each owner that leaves a held shard, and for each child that leaves one with no deletionTimestamp.
 * Caveat: an old holder whose watch lags the new holder's by more than `holdMs` may move the children late; the new
 * holder's `ctx.create` of a child of the same name then moves it itself (controller/children.ts).
 */
import type { Cache } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, keyOf, metadataOnly, refOf } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import type { Logger } from '../logger.ts';
import type { ShardGate } from './gate.ts';

/** How long a child's owner is held back, at most, while the child's label is given back. */
const SETTLE_MS = 3_000;

/** What the moves are made with. */
export interface ShardMovesOptions {
  readonly gate: ShardGate;
  readonly cache: Cache;
  readonly client: Client;
  readonly log: Logger;
  /** The controllers' primary kinds. */
  readonly primaries: readonly Kind[];
  /** The owned kinds: partitioned, and not primary. */
  readonly owned: readonly Kind[];
  /** Whether this replica's labeller gave `key` (of a primary kind) its first label lately: a new object. */
  readonly labelled: (kind: Kind, key: string) => boolean;
  /** How long a child's owner is held back, at most, while the child's label is given back (default 3 s). */
  readonly settleMs?: number;
}

/** Follows the objects that change shard; see the module comment. */
export class ShardMoves {
  readonly #o: ShardMovesOptions;

  constructor(options: ShardMovesOptions) {
    this.#o = options;
  }

  /** Starts following the primary and owned kinds' events. */
  follow(): void {
    const { gate, cache } = this.#o;
    // under the server filter a primary object's shard is its uid's: it arrives only by creation, leaves only by deletion
    const moving = gate.scheme.primariesMove;
    for (const kind of this.#o.primaries)
      cache.informer(kind).addEventHandler({
        add: (obj) => {
          if (!moving) return;
          const s = gate.shardOf(obj);
          const key = keyOf(obj);
          if (s !== undefined && gate.isActive(s) && !this.#o.labelled(kind, key)) gate.arrived(key);
        },
        update: (old, obj) => {
          const [from, to] = [gate.shardOf(old), gate.shardOf(obj)];
          if (to === from) return;
          gate.left(keyOf(obj), to);
          if (from !== undefined && to !== undefined && !gate.isActive(to)) void this.#moveChildren(obj, from, to);
        },
        delete: (obj) => {
          gate.left(keyOf(obj), undefined);
          const from = gate.shardOf(obj);
          if (moving && from !== undefined && gate.isActive(from)) void this.#ownerLeft(kind, obj, from);
        },
      });
    for (const kind of this.#o.owned)
      cache.informer(kind).addEventHandler({ delete: (child) => this.#childLeft(kind, child) });
  }

  /** An owner left shard `from` (held here) by the cache's account: where did it go? Its children follow it there. */
  async #ownerLeft(kind: Kind, owner: KubeObject, from: number): Promise<void> {
    try {
      const now = await this.#o.client.getIfExists(metadataOnly(kind), refOf(owner));
      const to = this.#o.gate.shardOf(now);
      if (now?.metadata.uid !== owner.metadata.uid || to === undefined || to === from) return;
      await this.#moveChildren(owner, from, to);
    } catch (err) {
      this.#o.log.warn({ ...refOf(owner), err: messageOf(err) }, 'sharding: could not follow an owner that moved');
    }
  }

  /** Moves the cached children of `owner` still in shard `from` to shard `to`. */
  async #moveChildren(owner: KubeObject, from: number, to: number): Promise<void> {
    const uid = owner.metadata.uid;
    if (!uid) return;
    const client = this.#o.client.withGuard(() => this.#o.gate.check(from));
    for (const kind of this.#o.owned) {
      const children = await this.#o.cache.list(kind, { index: { name: 'controller', value: uid } });
      for (const child of children.filter((c) => this.#o.gate.scheme.childShardOf(c) === from))
        await this.#label(client, kind, child, to);
    }
  }

  /** A child left a partition of the cache: given its owner's shard back if it still exists; its owner waits. */
  #childLeft(kind: Kind, child: KubeObject): void {
    if (child.metadata.deletionTimestamp) return;
    const owner = this.ownerOf(child);
    const s = this.#o.gate.shardOf(owner);
    if (!owner || s === undefined || !this.#o.gate.isActive(s)) return;
    const ownerKey = keyOf(owner);
    const settled = this.#giveBack(kind, child, s, () => this.#o.gate.left(ownerKey, undefined));
    this.#o.gate.hold(ownerKey, settled, this.#o.settleMs ?? SETTLE_MS);
  }

  /**
   * Labels `child` with shard `s` if it still exists without it (`exists` runs then), then waits (bounded) for the
   * cache to show it.
   */
  async #giveBack(kind: Kind, child: KubeObject, s: number, exists: () => void): Promise<void> {
    try {
      const now = await this.#o.client.getIfExists(metadataOnly(kind), refOf(child));
      if (!now || now.metadata.uid !== child.metadata.uid || this.#o.gate.scheme.childShardOf(now) === s) return;
      exists();
      await this.#label(
        this.#o.client.withGuard(() => this.#o.gate.check(s)),
        kind,
        now,
        s,
      );
      const store = this.#o.cache.informer(kind).store;
      const key = keyOf(child);
      const until = performance.now() + (this.#o.settleMs ?? SETTLE_MS);
      while (store.get(key)?.metadata.uid !== child.metadata.uid && performance.now() < until)
        await new Promise((r) => setTimeout(r, 20));
    } catch (err) {
      this.#o.log.warn({ ...refOf(child), err: messageOf(err) }, "sharding: could not give a child its owner's label");
    }
  }

  /** Writes `child`'s shard label `to` (a merge patch of the label alone); a child gone meanwhile is let be. */
  async #label(client: Client, kind: Kind, child: KubeObject, to: number): Promise<void> {
    const patch = { metadata: { labels: { [SHARD_LABEL]: this.#o.gate.scheme.labelValue(to) } } };
    try {
      await client.patch(metadataOnly(kind), refOf(child), patch);
      this.#o.log.debug({ kind: kind.kind, ...refOf(child), shard: to }, 'sharding: moved a child to its owner');
    } catch (err) {
      if (!isApiError(err, 'NotFound')) throw err;
    }
  }

  /** The cached primary object that controls `child`, if any. */
  ownerOf(child: KubeObject): KubeObject | undefined {
    const ref = child.metadata.ownerReferences?.find((o) => o.controller);
    if (!ref) return undefined;
    const kind = this.#o.primaries.find((k) => k.kind === ref.kind && k.apiVersion === ref.apiVersion);
    if (!kind) return undefined;
    const key = child.metadata.namespace ? `${child.metadata.namespace}/${ref.name}` : ref.name;
    const owner = this.#o.cache.informer(kind).store.get(key);
    return owner?.metadata.uid === ref.uid ? owner : undefined;
  }
}
