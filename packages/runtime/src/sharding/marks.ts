/**
 * @module sharding/marks
 * The filter mark of the fences: each fence Lease says, in `opkit.dev/shard-filter` (none: `labels`), under which
 * filter (scheme.ts) its holder acts. The two filters put an object in different shards, so a fence of one filter
 * cannot keep a replica of the other off that object; the marks keep the filters apart instead.
 *
 * Guarantees (with the coordinator's rule that a replica takes a fence only when, in one list of the ring's Leases,
 * all `SHARD_COUNT` fences exist and carry its own filter's mark):
 * - a fence's mark changes only while the fence is free (`holderIdentity` ""), by a write checked against the
 *   resourceVersion read, so a held fence keeps the mark it was taken under;
 * - hence no two fences are ever held under different filters: a list that shows every fence marked with a filter
 *   shows none held under another, and a take after it is checked against the resourceVersion of that list, which a
 *   later re-mark (of a free fence) changes. So never two filters act at once, whatever the replicas see of each
 *   other's member Leases.
 * Cost: when the filter of a ring changes (or it starts), one write per fence, all at once within the round's bound
 * (the renew deadline), and the takes wait one round.
 */
import { type Lease, Leases } from '../client/builtins.ts';
import { isApiError } from '../client/errors.ts';
import { messageOf } from '../errors.ts';
import { SHARD_COUNT } from '../helpers/shardlabel.ts';
import { withTimeout } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import type { Clock } from '../workqueue/index.ts';
import type { ShardLeaseClient } from './host.ts';
import { FILTER_ANNOTATION, RING_LABEL, ROLE_LABEL } from './labels.ts';

/** The filter a fence is marked with (none: `labels`); undefined for a fence that does not exist. */
export function markOf(fence: Lease | undefined): string | undefined {
  return fence && (fence.metadata.annotations?.[FILTER_ANNOTATION] ?? 'labels');
}

/** The metadata of a new fence of `ring`, marked with `filter`. */
export function fenceMetadata(namespace: string, ring: string, b: number, filter: string) {
  const labels = { [RING_LABEL]: ring, [ROLE_LABEL]: 'shard' };
  return { namespace, name: `${ring}-shard-${b}`, labels, annotations: { [FILTER_ANNOTATION]: filter } };
}

/** What marking needs. */
export interface MarkOptions {
  readonly client: ShardLeaseClient;
  readonly namespace: string;
  readonly ring: string;
  readonly filter: string;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** How long the marking may take (the time left in the round). */
  readonly timeoutMs: number;
  readonly clock: Clock;
}

/**
 * Whether every fence (as just listed) exists and is marked `filter`: then takes may go ahead. Otherwise marks what
 * it can — creates a missing fence free and marked, re-marks a free one (checked against its resourceVersion) — and
 * answers false: the takes wait for a list that shows them all marked.
 */
export async function marked(fences: ReadonlyMap<number, Lease>, o: MarkOptions): Promise<boolean> {
  const unmarked = Array.from({ length: SHARD_COUNT }, (_, b) => b).filter((b) => markOf(fences.get(b)) !== o.filter);
  if (unmarked.length === 0) return true;
  const mark = async (b: number, signal: AbortSignal) => {
    const fence = fences.get(b);
    if (fence?.spec?.holderIdentity) return; // held under another filter: its holder frees it first
    try {
      if (fence) {
        const annotations = { ...fence.metadata.annotations, [FILTER_ANNOTATION]: o.filter };
        await o.client.update(Leases, { ...fence, metadata: { ...fence.metadata, annotations } }, { signal });
      } else {
        const metadata = fenceMetadata(o.namespace, o.ring, b, o.filter);
        await o.client.create(Leases, { metadata, spec: { holderIdentity: '' } }, { signal });
      }
    } catch (err) {
      if (signal.aborted) return;
      const expected = isApiError(err, 'Conflict') || isApiError(err, 'AlreadyExists');
      o.log[expected ? 'debug' : 'warn']({ shard: b, err: messageOf(err) }, 'sharding: could not mark the fence');
    }
  };
  // all at once, within the round's bound: a slow apiserver must not hold the renewals back
  const all = (signal: AbortSignal) => Promise.all(unmarked.map((b) => mark(b, signal)));
  await withTimeout(o.timeoutMs, all, o.clock, o.signal).catch(() => {});
  return false;
}
