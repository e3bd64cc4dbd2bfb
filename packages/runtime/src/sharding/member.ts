/**
 * @module sharding/member
 * This replica's member Lease in a ring (`<ring>-member-<identity>`): created on the first renewal, renewed with its
 * resourceVersion, deleted on leave. It is fresh while the start of the last successful renewal is less than the
 * renew deadline ago; each attempt is cut off at what is left of it, and `onStale` runs once it passes with no renewal
 * after it (on the injected monotonic clock): at the deadline's timer, or at the first `check()` or renewal that finds
 * it passed, whichever comes first. Each renewal also says which members this replica judges dead.
 */

import { type Lease, Leases } from '../client/builtins.ts';
import { isApiError } from '../client/errors.ts';
import { messageOf } from '../errors.ts';
import { withTimeout } from '../internal/sleep.ts';
import { holderSpec, LeaseHold } from '../lease/lease.ts';
import type { Logger } from '../logger.ts';
import type { Clock } from '../workqueue/index.ts';
import type { ShardLeaseClient } from './host.ts';
import { DEAD_ANNOTATION, FILTER_ANNOTATION, RING_LABEL, ROLE_LABEL } from './labels.ts';
import type { MemberView } from './view.ts';

/** What a member Lease is made with. */
export interface MemberLeaseOptions {
  readonly client: ShardLeaseClient;
  readonly namespace: string;
  readonly ring: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly clock: Clock;
  readonly wallClock: () => Date;
  readonly log: Logger;
  /** How this replica's caches select shards, announced on its Lease (`FILTER_ANNOTATION`). */
  readonly filter: () => string;
  /** Its role label: `member`, or `standby` while its filter does not lead (view.ts `sameFilter`). */
  readonly role: () => 'member' | 'standby';
  /** The renew deadline passed with no renewal: stop acting now. */
  readonly onStale: () => void;
}

/** This replica's member Lease: see the module comment. */
export class MemberLease {
  readonly #o: MemberLeaseOptions;
  #lease: Lease | undefined;
  /** The right to act its renewals give (internal/lease.ts). */
  readonly #hold: LeaseHold;

  constructor(options: MemberLeaseOptions) {
    this.#o = options;
    this.#hold = new LeaseHold({ ...options, onLost: () => options.onStale() });
  }

  /** The Lease's name. */
  get name(): string {
    return `${this.#o.ring}-member-${this.#o.identity}`;
  }

  /** Whether this replica may act: renewed within the renew deadline. */
  get fresh(): boolean {
    return this.#hold.held;
  }

  /**
   * As `fresh`, and the first call that finds the renew deadline passed runs `onStale` then, before it answers — so a
   * replica that resumes after a pause stops on its first check, whether or not the deadline's timer has run yet.
   */
  check(): boolean {
    return this.#hold.check();
  }

  /**
   * Renews (or, first, creates) the Lease, each attempt bounded by what is left of the renew deadline; `dead`: the
   * members this replica judges dead, written as the annotation `opkit.dev/shard-dead` for the others to read.
   */
  async renew(stop: AbortSignal, dead: readonly string[] = []): Promise<void> {
    const { clock, retryPeriodMs } = this.#o;
    const started = clock.now();
    const deadline = this.#hold.deadline;
    const joined = deadline !== undefined;
    const left = deadline === undefined ? retryPeriodMs : deadline - started;
    if (left <= 0) {
      this.#hold.check();
      return;
    }
    try {
      this.#lease = await withTimeout(left, (signal) => this.#write(signal, dead), this.#o.clock, stop);
    } catch (err) {
      this.#o.log.warn({ err: messageOf(err) }, 'sharding: could not renew the member Lease');
      if (isApiError(err, 'Conflict') || isApiError(err, 'NotFound')) this.#lease = undefined;
      return;
    }
    if (this.#hold.renewed(started) && !joined) this.#o.log.info({ lease: this.name }, 'sharding: joined the ring');
  }

  async #write(signal: AbortSignal, dead: readonly string[]): Promise<Lease> {
    const { client, namespace, ring, identity, leaseDurationMs, filter, role } = this.#o;
    const now = this.#o.wallClock();
    const renewed = (l: Lease, isNew = false): Lease => ({
      ...l,
      metadata: {
        ...l.metadata,
        labels: { ...l.metadata.labels, [RING_LABEL]: ring, [ROLE_LABEL]: role() },
        annotations: { ...l.metadata.annotations, [DEAD_ANNOTATION]: dead.join(','), [FILTER_ANNOTATION]: filter() },
      },
      spec: holderSpec(l.spec, identity, leaseDurationMs, now, isNew),
    });
    if (this.#lease) return client.update(Leases, renewed(this.#lease), { signal });
    const metadata = { namespace, name: this.name };
    try {
      return await client.create(Leases, renewed({ metadata }, true), { signal });
    } catch (err) {
      if (!isApiError(err, 'AlreadyExists')) throw err;
      return client.update(Leases, renewed(await client.get(Leases, { namespace, name: this.name }, { signal })), {
        signal,
      });
    }
  }

  /** Leave: no deadline any more; the Lease is deleted (it expires by itself if that fails). */
  async delete(): Promise<void> {
    this.#hold.release();
    const { client, namespace, log } = this.#o;
    try {
      await withTimeout(
        5_000,
        (signal) => client.delete(Leases, { namespace, name: this.name }, { signal }),
        this.#o.clock,
      );
    } catch (err) {
      if (!isApiError(err, 'NotFound'))
        log.warn({ err: messageOf(err) }, 'sharding: could not delete the member Lease; it expires by itself');
    }
  }
}

/**
 * Deletes the member Leases `view` has judged dead for ten lease durations, each checked against the resourceVersion
 * it was judged by (a Lease gone already, or renewed after all, is let be).
 */
export async function collectDead(
  members: readonly Lease[],
  view: Pick<MemberView, 'deadFor'>,
  o: { readonly client: ShardLeaseClient; readonly namespace: string; readonly leaseDurationMs: number },
): Promise<void> {
  for (const l of members) {
    const rv = view.deadFor(l.spec?.holderIdentity ?? '', 10 * o.leaseDurationMs);
    if (rv === undefined || !l.metadata.name) continue;
    const ref = { namespace: o.namespace, name: l.metadata.name };
    await o.client.delete(Leases, ref, { preconditions: { resourceVersion: rv } }).catch(() => {});
  }
}
