/**
 * @module sharding/children
 * Children that carry no label of the sharding's filter: those written before the operator was sharded (labelled
 * once at the start, before the replica joins), and those labelled for the other filter after a switch (labelled by
 * the replica that takes their owner's shard, before it starts the shard).
 *
 * Guarantees:
 * - `labelExistingChildren` labels, before joining, each child with no valid label under either filter with its
 *   controller owner's shard; a child of the other filter is left to the shards' holders (it is someone's child now).
 * - `adoptChildren` runs while the shard's fence is held and before its first reconcile (or, under `labels`, before a
 *   primary object's first label is written): each child of its owners without this filter's label is labelled (each
 *   write asking that the member Lease is fresh, four at once) and awaited in the cache (3 s at most), so a first
 *   reconcile does not miss it and make it again. The caller bounds it: past that bound the labellers finish the job,
 *   and a child made with `generateName` may then be made twice.
 */
import type { Cache } from '../cache/cache.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { type Kind, type KubeObject, keyOf, metadataOnly, refOf, resourceId } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { SHARD_LABEL } from '../helpers/shardlabel.ts';
import type { Logger } from '../logger.ts';
import type { ShardGate } from './gate.ts';
import type { Labeller } from './labeller.ts';
import { shardOf } from './ring.ts';
import { NO_SHARD_LABEL, type ShardScheme, uidShard } from './scheme.ts';

/** How long a shard's start waits, at most, for the children it labelled for itself to be cached. */
const ADOPT_MS = 3_000;

/** What the start-time pass needs. */
export interface ExistingChildren {
  readonly client: Client;
  readonly cache: Cache;
  readonly scheme: ShardScheme;
  readonly gate: ShardGate;
  readonly log: Logger;
  readonly primaries: readonly Kind[];
  readonly owned: readonly Kind[];
  /** The shard key of a primary object by its namespace and name (the labels filter). */
  readonly keyOf: (namespace: string | undefined, name: string) => string;
}

/** See the module comment: one paginated list per owned kind and watched namespace, once, before joining. */
export async function labelExistingChildren(o: ExistingChildren, signal: AbortSignal): Promise<void> {
  const shardOfOwner = ownerShards(o, signal);
  for (const resource of o.owned)
    for (const namespace of o.cache.namespacesOf(resource) ?? [undefined]) {
      const kind = metadataOnly(resource);
      try {
        const options = { labelSelector: NO_SHARD_LABEL, signal, ...(namespace ? { namespace } : {}) };
        for await (const page of o.client.listPages(kind, options))
          for (const child of page.items) {
            const shard = await shardOfOwner(child);
            if (shard === undefined) continue;
            const patch = { metadata: { labels: { [SHARD_LABEL]: o.scheme.labelValue(shard) } } };
            await o.client.patch(kind, refOf(child), patch, { signal }).catch((err: unknown) => {
              if (!isApiError(err, 'NotFound')) throw err;
            });
          }
      } catch (err) {
        if (signal.aborted) return;
        o.log.warn({ resource: resourceId(kind), err: messageOf(err) }, 'sharding: could not label existing children');
      }
    }
}

/**
 * The shard of a child's controller owner when that is a primary object: under `server` its uid's (the reference
 * names it); under `labels` the owner's label (read once per owner), else the hash of its key, as the labeller will
 * label it. Undefined for a child whose owner is recreated since (the garbage collector's).
 */
function ownerShards(o: ExistingChildren, signal: AbortSignal): (child: KubeObject) => Promise<number | undefined> {
  const known = new Map<string, number>();
  return async (child) => {
    const ref = child.metadata.ownerReferences?.find((r) => r.controller);
    const kind = o.primaries.find(
      (p) => p.kind === ref?.kind && `${p.group ? `${p.group}/` : ''}${p.version}` === ref?.apiVersion,
    );
    if (!ref || !kind) return undefined;
    if (!o.scheme.primariesMove) return shardOfOwnerRef(child, o.primaries);
    const cached = known.get(ref.uid);
    if (cached !== undefined) return cached;
    const at = { ...(child.metadata.namespace ? { namespace: child.metadata.namespace } : {}), name: ref.name };
    const owner = await o.client.getIfExists(metadataOnly(kind), at, { signal });
    if (owner && owner.metadata.uid !== ref.uid) return undefined;
    const shard = o.gate.shardOf(owner) ?? shardOf(o.keyOf(child.metadata.namespace, ref.name));
    known.set(ref.uid, shard);
    return shard;
  };
}

/** Under `server`: the shard of a child's controller owner, from the uid its reference names, if a primary kind. */
export function shardOfOwnerRef(child: KubeObject, primaries: readonly Kind[]): number | undefined {
  const ref = child.metadata.ownerReferences?.find((r) => r.controller);
  const primary = primaries.some((p) => p.kind === ref?.kind && p.apiVersion === ref?.apiVersion);
  return ref && primary ? uidShard(ref.uid) : undefined;
}

/** What adopting children needs: the owned kinds' labellers, the cache, and what each write asks first. */
export interface Adoption {
  readonly labellers: readonly Labeller[];
  readonly cache: Cache;
  /** Throws (an `AbortError`) when this replica may not write for the shard now. */
  readonly guard: () => void;
}

/**
 * See the module comment: the children of shard `shard`'s owners (`{ shard }`) or of one owner (`{ controller: uid }`)
 * that carry no label of this filter are labelled with `shard`'s and awaited in the cache; `ADOPT_MS` at most for
 * the waiting, and the whole bounded by `signal`.
 */
export async function adoptChildren(
  which: { readonly shard: number } | { readonly controller: string },
  shard: number,
  o: Adoption,
  signal: AbortSignal,
): Promise<void> {
  for (const l of o.labellers) {
    const written = await l.labelNow(which, shard, o.guard, signal);
    const store = o.cache.informer(l.kind).store;
    const until = performance.now() + ADOPT_MS;
    const missing = () => written.some((c) => store.get(keyOf(c))?.metadata.uid !== c.metadata.uid);
    while (missing() && performance.now() < until && !signal.aborted) await new Promise((r) => setTimeout(r, 20));
  }
}
