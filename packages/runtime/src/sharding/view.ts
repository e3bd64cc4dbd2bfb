/**
 * @module sharding/view
 * What a replica knows of the other members of its ring, judged as client-go's leader election judges a holder: by
 * when it last saw a member's Lease change, on its own monotonic clock — never by the times written in it.
 *
 * Guarantees: a member is dead once its Lease has not changed (or has been missing) for the lease duration since this
 * replica first saw it that way; alive before. `live()` leaves out, besides the dead, the members that a live member
 * reports dead (`opkit.dev/shard-dead`): a replica that joined recently cannot judge them yet, and without that it
 * would compute other owners than everyone else. A report changes who owns which shard, never who may act on one:
 * taking a fence still needs this replica's own judgement, or a free fence. Likewise `sameFilter` (which filter's
 * members own shards) changes owners only: the fences' marks (marks.ts) keep the filters apart.
 */
import type { Lease } from '../client/builtins.ts';
import { LeaseJudge } from '../lease/lease.ts';
import type { Logger } from '../logger.ts';
import type { Clock } from '../workqueue/index.ts';
import { DEAD_ANNOTATION, FILTER_ANNOTATION } from './labels.ts';

/** The other members of a ring, as this replica has seen their Leases. */
export class MemberView {
  readonly #me: string;
  readonly #leaseMs: number;
  readonly #clock: Clock;
  /** Other members' Leases, judged as every Lease holder is (internal/lease.ts). */
  readonly #judge: LeaseJudge;
  /** Holders named by a fence with no member Lease: since when (monotonic). */
  readonly #absent = new Map<string, number>();
  /** Members reported dead by live members, as of the last `observe`. */
  #reported = new Set<string>();
  /** Whether this replica was left out last round because live members use another filter (undefined: not asked). */
  #deferred: boolean | undefined;

  constructor(me: string, leaseDurationMs: number, clock: Clock) {
    this.#me = me;
    this.#leaseMs = leaseDurationMs;
    this.#clock = clock;
    this.#judge = new LeaseJudge(clock);
  }

  /** Takes in the ring's member Leases, as just listed. */
  observe(members: readonly Lease[]): void {
    const listed = new Set<string>();
    for (const l of members) {
      const id = l.spec?.holderIdentity ?? '';
      if (id === '' || id === this.#me) continue;
      listed.add(id);
      this.#absent.delete(id);
      this.#judge.observe(id, l);
    }
    for (const id of this.#judge.keys()) if (!listed.has(id)) this.#judge.forget(id);
    this.#reported = new Set(
      members
        .filter((l) => this.#alive(l.spec?.holderIdentity ?? ''))
        .flatMap((l) => (l.metadata.annotations?.[DEAD_ANNOTATION] ?? '').split(',').filter(Boolean)),
    );
  }

  /** The other members alive and reported dead by none. */
  live(): string[] {
    return this.#judge.keys().filter((id) => this.#alive(id) && !this.#reported.has(id));
  }

  /** The members this replica judges dead. */
  judgedDead(): string[] {
    return this.#judge.keys().filter((id) => !this.#alive(id));
  }

  /** Whether `holder` (of a fence) is dead: its Lease unchanged, or missing, for the lease duration. */
  dead(holder: string): boolean {
    if (this.#judge.has(holder)) return this.#judge.dead(holder, this.#leaseMs);
    const now = this.#clock.now();
    const since = this.#absent.get(holder) ?? now;
    this.#absent.set(holder, since);
    return now - since >= this.#leaseMs;
  }

  /** When the next member alive now will count as dead if it goes on not renewing (monotonic); +∞ with none. */
  nextExpiry(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const id of this.#judge.keys())
      if (this.#alive(id)) next = Math.min(next, this.#judge.expiresAt(id, this.#leaseMs) ?? next);
    return next;
  }

  /** The resourceVersion of a member's Lease when it has been dead for `ms`, for a delete checked against it. */
  deadFor(id: string, ms: number): string | undefined {
    return this.#judge.dead(id, ms) ? this.#judge.version(id) : undefined;
  }

  #alive(id: string): boolean {
    return this.#judge.has(id) && !this.#judge.dead(id, this.#leaseMs);
  }

  /**
   * The role of this replica's member Lease: `standby` while it is left out of the owners (before its first round:
   * unless its filter is `labels`, which leads) and `idle` (no shard held, none being taken or handed off), so a
   * replica of an older opkit, which counts only members, never overlooks one that still holds a fence.
   */
  role(filter: string, idle: boolean): 'member' | 'standby' {
    return (this.#deferred ?? filter !== 'labels') && idle ? 'standby' : 'member';
  }

  /** The live members that may own shards (`sameFilter`); logs when this replica starts or stops being left out. */
  eligible(live: readonly string[], members: readonly Lease[], filter: string, log: Logger): string[] {
    const eligible = sameFilter(live, members, this.#me, filter);
    const deferred = !eligible.includes(this.#me);
    // a replica not live itself (its Lease not fresh) owns nothing anyway: nothing to say
    if (!live.includes(this.#me) || deferred === this.#deferred) return eligible;
    const first = this.#deferred === undefined;
    this.#deferred = deferred;
    if (first && !deferred) return eligible;
    if (deferred)
      log.warn({ filter }, 'sharding: live members select shards by another filter: owning none until they leave');
    else log.info({ filter }, 'sharding: every live member selects shards by this filter now');
    return eligible;
  }
}

/**
 * The live members that may own shards: all one filter's (scheme.ts), as two filters put an object in different
 * shards. `labels` leads while any live member uses it (every apiserver serves it, and a replica of an opkit without
 * the annotation uses it); a `server` replica then owns nothing until none is left. Every replica computes the same.
 */
export function sameFilter(live: readonly string[], members: readonly Lease[], me: string, mine: string): string[] {
  const filterOf = new Map(
    members.map((l) => [l.spec?.holderIdentity ?? '', l.metadata.annotations?.[FILTER_ANNOTATION] ?? 'labels']),
  );
  filterOf.set(me, mine);
  const of = (id: string) => filterOf.get(id) ?? 'labels';
  const leading = live.some((id) => of(id) === 'labels') ? 'labels' : mine;
  return live.filter((id) => of(id) === leading);
}
