/**
 * @module sharding/coordinator
 * Membership and hand-off of shards between the replicas of a sharded operator, on `coordination.k8s.io/v1` Leases:
 * each replica renews a member Lease (`<ring>-member-<identity>`); each shard has a fence Lease (`<ring>-shard-<b>`)
 * whose `holderIdentity` is the replica that may act on the shard's objects ("" when free). Every retry period a
 * replica renews, lists the ring's Leases, computes the owners over the live members of the leading filter (ring.ts,
 * view.ts; the others are `standby` members and own nothing) and moves towards them: it releases a shard it holds but
 * no longer owns; it takes one it owns once the fence is free or its holder dead, and every fence carries its filter.
 *
 * Guarantees (never two owners at once):
 * - A shard changes hands only by a write to its fence with the resourceVersion last read: two replicas never both
 *   win it.
 * - A release drains first (`ShardHost.release`: no new work, in-flight reconciles ended) before the fence says "".
 * - A replica acts only while its member Lease is fresh: when no renewal has succeeded for `renewDeadlineMs` after the
 *   start of the last successful one, it drops every shard at once (`ShardHost.lose`: in-flight reconciles abort).
 *   Freshness is not left to a timer, which fires late after a pause (SIGSTOP, a long GC, a VM migration): `holds()`
 *   judges it by the monotonic clock at the moment it is asked, and the first call past the deadline drops every
 *   shard then. The host asks it before each reconcile, each request a reconcile sends and each label write, so a
 *   replica resumed after a pause sends nothing for a shard. The window that remains: a request that passed the
 *   check and then took longer than leaseDuration − renewDeadline (5 s by default) to reach the apiserver and be run
 *   there (a pause between the check and the socket write, a new connection's handshake, a slow network) can land
 *   after another replica took the shard; only a precondition checked by the apiserver could close it.
 *   Another replica takes a fence from a holder only once the holder's member Lease has not changed (or been missing)
 *   for `leaseDurationMs` by its own monotonic clock. As renewDeadline < leaseDuration, the holder has stopped before
 *   anyone else may start (clock rates, not readings, must agree, as for client-go's leader election). A member that
 *   judges a holder dead that way frees its fences even when it does not own them, so an owner that joined since
 *   (and so has not seen the holder long enough to judge it) takes them at once.
 * - After losing its Lease, or a stop, a replica takes shards again only through the fences, like any other.
 * - Never two filters at once (their shards differ): a take waits until every fence carries the taker's filter, and a
 *   fence is re-marked only while free (marks.ts).
 *
 * A join or a leave moves few shards (ring.ts); a graceful stop releases every shard (drained), frees every fence that
 * may name it (a take the stop cut short, a write whose answer was lost) and deletes the member Lease. Member Leases
 * dead for ten lease durations are deleted.
 */

import { type Lease, Leases } from '../client/builtins.ts';
import { isApiError } from '../client/errors.ts';
import { messageOf, UsageError } from '../errors.ts';
import { sleep, withTimeout } from '../internal/sleep.ts';
import { checkLeaseTimings, DEFAULT_LEASE_TIMINGS, holderSpec, monotonicClock } from '../lease/lease.ts';
import type { Logger } from '../logger.ts';
import type { Clock } from '../workqueue/index.ts';
import type { ShardHost, ShardLeaseClient, ShardObserver } from './host.ts';
import { RING_LABEL, ROLE_LABEL } from './labels.ts';
import { fenceMetadata, marked } from './marks.ts';
import { collectDead, MemberLease } from './member.ts';
import { isHeld, nextStep, type ShardPhase, type ShardState } from './plan.ts';
import { assignShards, SHARD_COUNT } from './ring.ts';
import { MemberView } from './view.ts';

/** Options of a `ShardCoordinator`. */
export interface ShardCoordinatorOptions {
  readonly client: ShardLeaseClient;
  /** Namespace of the Leases. */
  readonly namespace: string;
  /** The ring's name, shared by every replica (the operator's name): prefix of the Lease names. */
  readonly ring: string;
  /** This replica's identity: unique, a DNS label. */
  readonly identity: string;
  readonly host: ShardHost;
  readonly log: Logger;
  /** Default 15 s. */
  readonly leaseDurationMs?: number;
  /** Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Default 2 s. */
  readonly retryPeriodMs?: number;
  readonly observer?: ShardObserver;
  /** How this replica's caches select shards (scheme.ts; default `labels`): members of another filter share none. */
  readonly filter?: () => string;
  /** A monotonic clock (default `performance.now()` and Node's timers). */
  readonly clock?: Clock;
  /** The wall clock, for the times written into Leases. */
  readonly wallClock?: () => Date;
}

export type { ShardHost, ShardLeaseClient, ShardObserver } from './host.ts';
export { RING_LABEL, ROLE_LABEL } from './labels.ts';

/** Joins the ring, takes and hands off shards, and leaves it on stop: see the module comment. */
export class ShardCoordinator {
  readonly #o: Required<Omit<ShardCoordinatorOptions, 'observer'>> & { observer: ShardObserver };
  /** Every shard's state on this replica (plan.ts): its phase, the hand-off under way, our last fence write. */
  readonly #shards: ShardState[] = Array.from({ length: SHARD_COUNT }, () => ({
    phase: 'free' as ShardPhase,
    wroteAt: Number.NEGATIVE_INFINITY,
    claimed: false,
  }));
  readonly #view: MemberView;
  readonly #member: MemberLease;
  #unbalancedSince: number | undefined;
  #members = 0;

  constructor(options: ShardCoordinatorOptions) {
    this.#o = {
      ...DEFAULT_LEASE_TIMINGS,
      clock: monotonicClock,
      wallClock: () => new Date(),
      observer: {},
      filter: () => 'labels',
      ...options,
    };
    const { leaseDurationMs: lease, renewDeadlineMs: renew, retryPeriodMs: retry } = this.#o;
    checkLeaseTimings('sharding', lease, renew, retry);
    const idle = () => this.#shards.every((st) => st.phase === 'free' && !st.task);
    const role = () => this.#view.role(this.#o.filter(), idle());
    this.#member = new MemberLease({ ...this.#o, onStale: () => this.#lose(), role });
    this.#view = new MemberView(this.#o.identity, lease, this.#o.clock);
  }

  /** The shards this replica holds now. */
  get held(): readonly number[] {
    return this.#heldShards();
  }

  /** Live members seen in the last round (this one included). */
  get members(): number {
    return this.#members;
  }

  /** The member Lease's name. */
  get memberLease(): string {
    return this.#member.name;
  }

  /** Runs rounds until `signal` aborts, then releases every shard (drained), frees its fences and leaves. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    const { clock, retryPeriodMs } = this.#o;
    while (!signal.aborted) {
      await this.#round(signal);
      // the next round after the retry period (jittered), or right when a live member's Lease runs out if that is
      // sooner: its shards are taken after the lease duration, not the lease duration plus most of a retry period
      const untilExpiry = this.#view.nextExpiry() - clock.now() + 20;
      await sleep(Math.max(20, Math.min(retryPeriodMs * (1 + Math.random() * 0.2), untilExpiry)), signal, clock);
    }
    await this.#leave();
  }

  /** One round: renew, list, move towards the owners. Exposed for tests with a fake clock. */
  async round(signal: AbortSignal = new AbortController().signal): Promise<void> {
    await this.#round(signal);
  }

  /**
   * Whether this replica may act now: its member Lease was renewed within the renew deadline, by the monotonic clock
   * at this moment. The first call past the deadline stops every shard then (`ShardHost.lose`), before it answers.
   */
  holds(): boolean {
    return this.#member.check();
  }

  /** As `holds()`, for a client guard: throws (an `AbortError`) when this replica may not act. */
  check(): void {
    if (!this.holds()) throw new DOMException('sharding: the member Lease is not fresh', 'AbortError');
  }

  async #round(stop: AbortSignal): Promise<void> {
    await this.#member.renew(stop, this.#view.judgedDead());
    let leases: Lease[];
    const listedAt = this.#o.clock.now();
    try {
      const { namespace, ring } = this.#o;
      const list = (signal: AbortSignal) =>
        this.#o.client.list(Leases, { namespace, labelSelector: `${RING_LABEL}=${ring}`, signal });
      leases = (await withTimeout(this.#o.renewDeadlineMs, list, this.#o.clock, stop)).items;
    } catch (err) {
      this.#o.log.warn({ err: messageOf(err) }, 'sharding: cannot list the Leases of the ring');
      return;
    }
    const fences = new Map<number, Lease>();
    const members: Lease[] = [];
    for (const l of leases) {
      const role = l.metadata.labels?.[ROLE_LABEL];
      if (role === 'member' || role === 'standby') members.push(l);
      else if (role === 'shard') {
        const b = Number(l.metadata.name?.slice(`${this.#o.ring}-shard-`.length));
        if (Number.isInteger(b) && b >= 0 && b < SHARD_COUNT) fences.set(b, l);
      }
    }
    const live = this.#observe(members);
    this.#members = live.length;
    if (!this.holds() || stop.aborted) {
      this.#o.observer.round?.(this.#heldShards().length, live.length);
      return;
    }
    const eligible = this.#view.eligible(live, members, this.#o.filter(), this.#o.log);
    const owners = assignShards(eligible);
    const { client, namespace, ring, log, leaseDurationMs, clock, renewDeadlineMs: timeoutMs } = this.#o;
    const marks = { client, namespace, ring, log, clock, timeoutMs, filter: this.#o.filter(), signal: stop };
    // takes wait until every fence carries this replica's filter (marks.ts); one left out marks nothing
    const ready = eligible.includes(this.#o.identity) && (await marked(fences, marks));
    for (let b = 0; b < SHARD_COUNT; b++) this.#step(b, fences.get(b), owners[b], listedAt, stop, ready);
    this.#balance(owners);
    this.#o.observer.round?.(this.#heldShards().length, live.length);
    await collectDead(members, this.#view, { client, namespace, leaseDurationMs });
  }

  /** Takes in the member Leases; answers the live members (this one included when fresh). */
  #observe(members: readonly Lease[]): string[] {
    this.#view.observe(members);
    const live = this.#view.live();
    return this.holds() ? [...live, this.#o.identity] : live;
  }

  /** Carries out the step plan.ts decides for shard `b` this round. */
  #step(b: number, fence: Lease | undefined, owner: string | undefined, at: number, stop: AbortSignal, ready: boolean) {
    const state = this.#state(b);
    const me = this.#o.identity;
    const holder = fence?.spec?.holderIdentity;
    const step = nextStep({
      phase: state.phase,
      holder: fence ? (holder ?? '') : undefined,
      owner,
      me,
      holderDead: () => this.#view.dead(holder ?? ''),
      listedSinceWrite: state.wroteAt < at,
    });
    switch (step) {
      case 'drop':
        this.#o.log.error(
          { shard: b, holder: holder ?? '' },
          'sharding: the fence of a held shard names another holder; dropping it',
        );
        this.#task(b, 'dropping', this.#drop(b, fence));
        return;
      case 'release':
        this.#task(b, 'releasing', this.#release(b));
        return;
      case 'acquire':
        // not every fence carries this filter yet: one a dead member holds is freed, so that it can be marked
        if (!ready && fence && holder && holder !== me) this.#task(b, 'freeing', this.#freeDead(b, fence, holder));
        if (!ready) return;
        this.#task(b, 'acquiring', this.#acquire(b, fence, holder ?? '', stop));
        return;
      case 'free':
        this.#task(b, 'freeing', this.#free(b));
        return;
      case 'free-dead':
        // owned by another member now: freed so that its owner, which may have joined since and so cannot judge the
        // holder dead yet, takes it at once (freeing is safe for the same reason taking is)
        if (fence) this.#task(b, 'freeing', this.#freeDead(b, fence, holder ?? ''));
        return;
      case 'none':
        return;
    }
  }

  #state(b: number): ShardState {
    const state = this.#shards[b];
    if (!state) throw new UsageError('InvalidArgument', `sharding: no shard ${b}`);
    return state;
  }

  /** The shards held here (plan.ts `isHeld`), in order. */
  #heldShards(): number[] {
    return this.#shards.flatMap((s, b) => (isHeld(s.phase) ? [b] : []));
  }

  /** Enters `phase` with `work` under way; when it ends, the shard is `free` unless the work left it `held`. */
  #task(b: number, phase: ShardPhase, work: Promise<void>): void {
    const state = this.#state(b);
    state.phase = phase;
    state.task = work.finally(() => {
      state.task = undefined;
      state.abort = undefined;
      if (state.phase !== 'held') state.phase = 'free';
    });
  }

  /** Takes the fence of `b` (a write with the resourceVersion read), then has the host run the shard. */
  async #acquire(b: number, fence: Lease | undefined, from: string, stop: AbortSignal): Promise<void> {
    const state = this.#state(b);
    const ctl = new AbortController();
    state.abort = ctl;
    try {
      const write = (signal: AbortSignal) => this.#writeFence(b, fence, this.#o.identity, signal);
      const written = await withTimeout(this.#o.renewDeadlineMs, write, this.#o.clock, stop);
      if (!written || !this.holds() || ctl.signal.aborted || stop.aborted) return;
      state.phase = 'starting';
      this.#o.log.info({ shard: b, ...(from ? { from } : {}) }, 'sharding: shard acquired');
      this.#o.observer.handoff?.(b, 'acquired', written, from || undefined);
      const running = await this.#o.host.acquire(b, AbortSignal.any([ctl.signal, stop]));
      if (state.phase !== 'starting') return; // stopped meanwhile (a stale Lease)
      if (running && !ctl.signal.aborted && !stop.aborted) {
        state.phase = 'held';
        return;
      }
      if (!running && !ctl.signal.aborted && !stop.aborted) {
        // given up by the host (its caches did not list in time): free the fence; a later round takes it again
        state.phase = 'freeing';
        this.#o.observer.handoff?.(b, 'released', undefined);
        await this.#free(b);
      }
    } catch (err) {
      const level = isApiError(err, 'Conflict') || isApiError(err, 'AlreadyExists') ? 'debug' : 'warn';
      this.#o.log[level]({ shard: b, err: messageOf(err) }, 'sharding: could not take the shard');
    }
  }

  /** Drains `b` and frees its fence. */
  async #release(b: number): Promise<void> {
    await this.#o.host.release(b);
    const state = this.#state(b);
    if (state.phase === 'releasing') state.phase = 'freeing';
    this.#o.log.info({ shard: b }, 'sharding: shard released');
    this.#o.observer.handoff?.(b, 'released', undefined);
    await this.#free(b);
  }

  /** The fence of a held shard names someone else: stop it without waiting. */
  async #drop(b: number, fence: Lease | undefined): Promise<void> {
    await this.#o.host.release(b, true);
    this.#o.observer.handoff?.(b, 'lost', fence);
  }

  /** Writes "" into the fence of `b` if it still names this replica (a fresh read, then a checked write). */
  async #free(b: number): Promise<void> {
    const { client, namespace, ring, identity, clock } = this.#o;
    try {
      await withTimeout(
        5_000,
        async (signal) => {
          const fence = await client.get(Leases, { namespace, name: `${ring}-shard-${b}` }, { signal });
          if (fence.spec?.holderIdentity === identity) await this.#writeFence(b, fence, '', signal);
          else this.#state(b).claimed = false;
        },
        clock,
      );
    } catch (err) {
      this.#o.log.warn({ shard: b, err: messageOf(err) }, 'sharding: could not free the fence (retried next round)');
    }
  }

  /** Writes "" into the fence of `b`, held by `dead` (checked against the resourceVersion read). */
  async #freeDead(b: number, fence: Lease, dead: string): Promise<void> {
    try {
      const free = (signal: AbortSignal) => this.#writeFence(b, fence, '', signal);
      await withTimeout(this.#o.renewDeadlineMs, free, this.#o.clock);
      this.#o.log.info({ shard: b, holder: dead }, 'sharding: freed the fence of a dead member');
    } catch (err) {
      this.#o.log.debug({ shard: b, err: messageOf(err) }, 'sharding: could not free the fence of a dead member');
    }
  }

  /** Creates or updates the fence of `b` to name `holder`; the write fails on a stale resourceVersion. */
  async #writeFence(b: number, fence: Lease | undefined, holder: string, signal: AbortSignal): Promise<Lease> {
    const { client, namespace, ring, leaseDurationMs } = this.#o;
    const spec = holderSpec(fence?.spec, holder, leaseDurationMs, this.#o.wallClock(), fence === undefined);
    const metadata = fenceMetadata(namespace, ring, b, this.#o.filter());
    const state = this.#state(b);
    if (holder === this.#o.identity) state.claimed = true; // before it is sent: its answer may never come
    const written = fence
      ? await client.update(Leases, { ...fence, spec }, { signal })
      : await client.create(Leases, { metadata, spec }, { signal });
    state.wroteAt = this.#o.clock.now();
    if (holder === '') state.claimed = false;
    return written;
  }

  /** The member Lease went stale: drop every shard now. */
  #lose(): void {
    const lost = this.#heldShards();
    for (const state of this.#shards) {
      state.abort?.abort();
      // a held shard is free now; one with a hand-off under way stays out of the rounds until that work ends
      if (state.phase === 'held') state.phase = 'free';
      else if (state.phase === 'starting' || state.phase === 'releasing') state.phase = 'dropping';
    }
    this.#o.host.lose();
    this.#o.observer.round?.(0, this.#members);
    this.#o.log.error({ shards: lost }, 'sharding: the member Lease could not be renewed in time: stopped every shard');
    for (const b of lost) this.#o.observer.handoff?.(b, 'lost', undefined);
  }

  /** Tracks how long this replica has held other shards than it owns. */
  #balance(owners: readonly (string | undefined)[]): void {
    const me = this.#o.identity;
    const now = this.#o.clock.now();
    const balanced = this.#shards.every((s, b) => (owners[b] === me) === isHeld(s.phase) && s.task === undefined);
    if (!balanced) this.#unbalancedSince ??= now;
    else if (this.#unbalancedSince !== undefined) {
      this.#o.observer.rebalanced?.((now - this.#unbalancedSince) / 1000);
      this.#unbalancedSince = undefined;
    }
  }

  /** Graceful stop: every shard released (drained) and freed, every `claimed` fence freed, the member Lease deleted. */
  async #leave(): Promise<void> {
    for (const state of this.#shards) state.abort?.abort();
    await Promise.allSettled(this.#shards.map((state) => state.task));
    const held = this.#heldShards();
    for (const b of held) this.#task(b, 'releasing', this.#release(b));
    const claimed = this.#shards.flatMap((s, b) => (s.claimed && !held.includes(b) ? [b] : []));
    for (const b of claimed) this.#task(b, 'freeing', this.#free(b));
    await Promise.allSettled([...held, ...claimed].map((b) => this.#state(b).task));
    await this.#member.delete();
    this.#o.log.info({ released: held.length, freed: claimed.length }, 'sharding: left the ring');
  }
}
