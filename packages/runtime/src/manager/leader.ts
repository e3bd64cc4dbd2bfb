/**
 * @module manager/leader
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go does it: try to acquire every `retryPeriod`
 * (jittered); while leading, renew every `retryPeriod`; if no renewal succeeded for `renewDeadline`, leadership is lost.
 *
 * Guarantees:
 * - Every duration is measured on a monotonic clock (`performance.now()`, injectable): a wall-clock jump in either
 *   direction neither ends a leadership early nor lets a standby take a live lease.
 * - The timings are checked as client-go checks them: leaseDuration > renewDeadline > 1.2 × retryPeriod
 *   (a `UsageError` `InvalidArgument` otherwise).
 * - Times are written as MicroTime (RFC 3339 with microseconds, from the wall clock), which the API requires.
 * - Another holder's lease is judged by when *we* last saw it change (any write: its resourceVersion; our monotonic
 *   clock), not by its renewTime, so clock skew between replicas cannot make us take a live lease. The judge, the
 *   hold of our own lease and the spec we write are internal/lease.ts, shared with sharding's member and fence Leases.
 * - Writes use the Lease's resourceVersion: two candidates can never both win the same round.
 * - `onStoppedLeading` runs at the renew deadline — `renewDeadline` after the start of the last successful renewal —
 *   even if a renewal is still in flight then (it is aborted): before the lease can expire for others, as
 *   renewDeadline < leaseDuration. The caller must stop acting at once.
 * - Fencing: `check()` throws unless this candidate leads and the renew deadline has not passed by the monotonic clock
 *   at that very moment; the first call past the deadline ends the leadership then (`onStoppedLeading`), whether or
 *   not the renew loop's timer has run. A manager asks it before each reconcile and right before each request a
 *   reconcile sends, so a leader paused past its lease (SIGSTOP, a long GC, a VM migration) sends nothing once it runs
 *   again, whichever of its timers fires first. client-go's elector (and so controller-runtime) has no such check.
 *   What remains: a request that passed the check and was then delayed on its way for longer than
 *   leaseDuration − renewDeadline (5 s by default) before the apiserver ran it — a pause in the moment between the
 *   check and the socket write, a new connection's handshake, or a slow network — can land after a successor took
 *   over. Nothing on the client side can close that window; only a precondition the apiserver checks could.
 * - On release (graceful stop) the lease is handed back (empty holder, 1 s duration) so a successor takes over
 *   within one retry period.
 */

import { type Lease, Leases } from '../client/builtins.ts';
import type { Client } from '../client/client.ts';
import { isApiError } from '../client/errors.ts';
import { microTime } from '../internal/microtime.ts';
import { sleep } from '../internal/sleep.ts';
import {
  checkLeaseTimings,
  DEFAULT_LEASE_TIMINGS,
  holderSpec,
  JITTER,
  LeaseHold,
  LeaseJudge,
  monotonicClock,
} from '../lease/lease.ts';
import type { Logger } from '../logger.ts';
import type { Clock } from '../workqueue/index.ts';
import type { LeaderElectionSettings } from './options.ts';

/** What leader election needs of a client. */
export type LeaseClient = Pick<Client, 'get' | 'create' | 'update'>;

/** Options of a `LeaderElector`: where the Lease is, who this candidate is, and the timings (client-go's defaults). */
export interface LeaderElectionOptions {
  /** Reads and writes the Lease (`get`, `create`, `update` on `coordination.k8s.io` leases). */
  readonly client: LeaseClient;
  /** The Lease's namespace. */
  readonly namespace: string;
  /** The Lease's name, shared by every replica of the operator. */
  readonly name: string;
  /** This candidate's identity (default: hostname + random suffix). */
  readonly identity: string;
  /** Default 15 s. */
  readonly leaseDurationMs?: number;
  /** Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Default 2 s. */
  readonly retryPeriodMs?: number;
  /** Where elections are logged. */
  readonly log: Logger;
  /** Measures every duration and runs every wait (default `monotonicClock`). */
  readonly clock?: Clock;
  /** The wall clock, for the times written into the Lease (default `new Date()`). */
  readonly wallClock?: () => Date;
}

/** What a `LeaderElector` calls as leadership changes. */
export interface LeaderCallbacks {
  /** Leadership acquired; `signal` aborts when it is lost or released. */
  onStartedLeading(signal: AbortSignal): void;
  /** Leadership lost (renewal failed past the deadline) — not called after a graceful release. */
  onStoppedLeading(): void;
  /** Another (or no) identity holds the lease. */
  onNewLeader?(identity: string): void;
}

export { microTime } from '../internal/microtime.ts';

/**
 * Leader election on a Lease, as client-go's: see the module comment for the timings and guarantees.
 *
 * @showModuleComment
 */
export class LeaderElector {
  readonly #o: Required<LeaderElectionOptions>;
  /** When the Lease was last seen to change, by our own clock (internal/lease.ts). */
  readonly #judge: LeaseJudge;
  /** The right to act our renewals give (internal/lease.ts): lost at the renew deadline. */
  readonly #hold: LeaseHold;
  /** When the other holder's lease runs out, by our own clock (from when we saw it last change). */
  #expiresAt: number | undefined;
  #leading = false;
  /** While leading: what `onStartedLeading`'s signal aborts with, and the callbacks to call on a loss. */
  #lead: { ctl: AbortController; callbacks: LeaderCallbacks } | undefined;
  #lastLeader: string | undefined;
  /** When the latest acquire/renew attempt started (monotonic): a success renews the lease as of then. */
  #lastAttemptAt = 0;

  constructor(options: LeaderElectionOptions) {
    this.#o = {
      ...DEFAULT_LEASE_TIMINGS,
      clock: monotonicClock,
      wallClock: () => new Date(),
      ...options,
    };
    const { leaseDurationMs: lease, renewDeadlineMs: renew, retryPeriodMs: retry } = this.#o;
    checkLeaseTimings('leader election', lease, renew, retry);
    this.#judge = new LeaseJudge(this.#o.clock);
    this.#hold = new LeaseHold({ renewDeadlineMs: renew, clock: this.#o.clock, onLost: () => this.#lost() });
  }

  /** Whether this candidate leads now. */
  get isLeader(): boolean {
    return this.#leading;
  }

  /**
   * Throws (an `AbortError`) unless this candidate leads and its last renewal started less than the renew deadline
   * ago, by the monotonic clock now; past the deadline, the leadership ends here and then (see the module comment).
   */
  check(): void {
    if (this.#leading && this.#hold.check()) return;
    throw new DOMException('leader election: not leading', 'AbortError');
  }

  /**
   * Campaigns until leading, then renews until `signal` aborts (then releases the lease) or leadership is lost.
   * Resolves after either; never rejects.
   */
  async run(signal: AbortSignal, callbacks: LeaderCallbacks): Promise<void> {
    const { log, retryPeriodMs, renewDeadlineMs, clock } = this.#o;
    while (!signal.aborted) {
      // each attempt is bounded, so a standby on a connection that hangs is back in the race within renewDeadline
      // an acquisition that returns past the renew deadline (the process was paused meanwhile) does not count
      if (
        (await this.#tryAcquireOrRenew(callbacks, renewDeadlineMs, signal)) &&
        this.#hold.renewed(this.#lastAttemptAt)
      )
        break;
      // the next try: after the retry period (jittered), or right when the holder's lease runs out if sooner — so a
      // failover takes the lease duration, not the lease duration plus most of a retry period
      const untilExpiry = this.#expiresAt === undefined ? Infinity : this.#expiresAt - clock.now() + 20;
      await sleep(
        Math.max(20, Math.min(retryPeriodMs * (1 + Math.random() * (JITTER - 1)), untilExpiry)),
        signal,
        clock,
      );
    }
    if (signal.aborted) {
      // the stop may have come as an attempt won the lease: hand it back (a no-op unless we hold it)
      this.#hold.release();
      await this.#release();
      return;
    }
    this.#leading = true;
    log.info({ lease: `${this.#o.namespace}/${this.#o.name}`, identity: this.#o.identity }, 'became leader');
    const leading = new AbortController();
    this.#lead = { ctl: leading, callbacks };
    callbacks.onStartedLeading(leading.signal);
    while (!signal.aborted && this.#leading) {
      const deadlineAt = this.#hold.deadline ?? clock.now();
      await sleep(Math.min(retryPeriodMs, deadlineAt - clock.now()), signal, clock);
      if (signal.aborted || !this.#leading) break;
      const left = deadlineAt - clock.now();
      if (left > 0 && (await this.#tryAcquireOrRenew(callbacks, left, signal))) {
        // a renewal that returns past the deadline (the process was paused meanwhile) loses the hold instead
        if (this.#leading) this.#hold.renewed(this.#lastAttemptAt);
        continue;
      }
      if (signal.aborted) break;
      this.#hold.check();
    }
    if (!this.#leading && this.#lead === undefined) return; // lost: onStoppedLeading ran
    this.#hold.release();
    this.#leading = false;
    this.#lead = undefined;
    leading.abort(new DOMException('leadership released', 'AbortError'));
    await this.#release();
  }

  /** The renew deadline passed: leadership ends now (once). */
  #lost(): void {
    const lead = this.#lead;
    if (!this.#leading || !lead) return;
    this.#leading = false;
    this.#lead = undefined;
    this.#o.log.error(
      { lease: `${this.#o.namespace}/${this.#o.name}`, renewDeadlineMs: this.#o.renewDeadlineMs },
      'leader election lost: could not renew the lease before the deadline',
    );
    lead.ctl.abort(new DOMException('leadership lost', 'AbortError'));
    lead.callbacks.onStoppedLeading();
  }

  /** One attempt, cut off after `timeoutMs` (by the injected clock). */
  async #tryAcquireOrRenew(callbacks: LeaderCallbacks, timeoutMs: number, stop: AbortSignal): Promise<boolean> {
    const timeout = new AbortController();
    const timer = this.#o.clock.setTimer(timeoutMs, () =>
      timeout.abort(new DOMException('leader election attempt timed out', 'TimeoutError')),
    );
    try {
      return await this.#attempt(callbacks, AbortSignal.any([stop, timeout.signal]));
    } finally {
      timer.cancel();
    }
  }

  async #attempt(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<boolean> {
    const { client, namespace, name, identity, leaseDurationMs, log, clock } = this.#o;
    this.#lastAttemptAt = clock.now();
    const KEY = 'lease';
    const now = this.#o.wallClock();
    const ref = { namespace, name };
    const opts = { signal };
    this.#expiresAt = undefined; // set again only when another holder's lease is seen running
    let lease: Lease;
    try {
      lease = await client.get(Leases, ref, opts);
    } catch (err) {
      if (!isApiError(err, 'NotFound')) {
        log.warn({ err: (err as Error).message }, 'leader election: cannot read the lease');
        return false;
      }
      try {
        const spec = holderSpec(undefined, identity, leaseDurationMs, now);
        this.#judge.observe(KEY, await client.create(Leases, { metadata: { namespace, name }, spec }, opts));
        this.#noteLeader(identity, callbacks);
        return true;
      } catch (e) {
        log.debug({ err: (e as Error).message }, 'leader election: create lost the race');
        return false;
      }
    }
    const holder = lease.spec?.holderIdentity ?? '';
    this.#judge.observe(KEY, lease);
    this.#noteLeader(holder, callbacks);
    const duration = (lease.spec?.leaseDurationSeconds ?? Math.ceil(leaseDurationMs / 1000)) * 1000;
    const heldByOther = holder !== '' && holder !== identity;
    if (heldByOther && !this.#judge.dead(KEY, duration)) {
      this.#expiresAt = this.#judge.expiresAt(KEY, duration);
      return false;
    }
    const updated: Lease = { ...lease, spec: holderSpec(lease.spec, identity, leaseDurationMs, now) };
    try {
      this.#judge.observe(KEY, await client.update(Leases, updated, opts));
      this.#noteLeader(identity, callbacks);
      return true;
    } catch (err) {
      log.debug({ err: (err as Error).message }, 'leader election: update failed');
      return false;
    }
  }

  async #release(): Promise<void> {
    const { client, namespace, name, identity, log } = this.#o;
    try {
      const lease = await client.get(Leases, { namespace, name }, { signal: AbortSignal.timeout(5_000) });
      if (lease.spec?.holderIdentity !== identity) return;
      const now = microTime(this.#o.wallClock());
      await client.update(
        Leases,
        {
          ...lease,
          spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now },
        },
        { signal: AbortSignal.timeout(5_000) },
      );
      log.info({ lease: `${namespace}/${name}` }, 'released the leader lease');
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'could not release the leader lease; it expires by itself');
    }
  }

  #noteLeader(identity: string, callbacks: LeaderCallbacks): void {
    if (identity === this.#lastLeader) return;
    this.#lastLeader = identity;
    callbacks.onNewLeader?.(identity);
  }
}

/**
 * The elector of a manager's `leaderElection` settings, and its Lease: `<name>-leader` in $POD_NAMESPACE (else the
 * client's namespace) unless the settings say otherwise; `defaults.identity` unless they name one.
 */
export function electorFor(
  le: LeaderElectionSettings,
  defaults: { readonly client: Client; readonly name: string; readonly log: Logger; readonly identity: string },
): { elector: LeaderElector; lease: { readonly namespace: string; readonly name: string } } {
  const lease = {
    namespace: le.namespace ?? process.env.POD_NAMESPACE ?? defaults.client.defaultNamespace,
    name: le.leaseName ?? `${defaults.name}-leader`,
  };
  const elector = new LeaderElector({
    client: defaults.client,
    ...lease,
    identity: le.identity ?? defaults.identity,
    log: defaults.log.child({ component: 'leader-election' }),
    ...(le.leaseDurationMs !== undefined ? { leaseDurationMs: le.leaseDurationMs } : {}),
    ...(le.renewDeadlineMs !== undefined ? { renewDeadlineMs: le.renewDeadlineMs } : {}),
    ...(le.retryPeriodMs !== undefined ? { retryPeriodMs: le.retryPeriodMs } : {}),
  });
  return { elector, lease };
}
