/**
 * @module lease/lease
 * The Lease primitives that leader election (manager/leader.ts) and sharding (sharding/member.ts, coordinator.ts,
 * view.ts) share, so that a rule about Lease timing is written once:
 * - the timings (client-go's defaults) and their check: leaseDuration > renewDeadline > 1.2 × retryPeriod > 0, each
 *   a finite number, else a `UsageError` (`InvalidArgument`) naming the one that fails; a monotonic clock.
 * - `LeaseHold`: the right to act that a holder's own renewals give.
 * - `LeaseJudge`: when another holder counts as dead.
 * - `holderSpec`: the spec a holder writes into a Lease.
 *
 * Guarantees:
 * - A hold is held while its last successful renewal started less than the renew deadline ago, by the injected
 *   monotonic clock at the moment it is asked. It is lost exactly once (`onLost`), at the first of: the deadline's
 *   timer, a `check()` that finds the deadline passed, a renewal that returns after it. So a process resumed after a
 *   pause (SIGSTOP, a long GC) loses the hold at its first check, whichever of its timers fires first; a renewal that
 *   was in flight through the pause never revives it.
 * - A holder is judged dead once its Lease has not changed (its resourceVersion: any write is a sign of life) for its
 *   lease duration since this process first saw it that way, on this process's own monotonic clock — never by the
 *   times written in the Lease, so clock skew between replicas cannot make a live holder look dead (client-go's rule).
 * - A holder's spec is MicroTime (the API's format); `acquireTime` is set and `leaseTransitions` counts up when the
 *   holder changes to a non-empty one (or the Lease is new).
 */
import type { Lease } from '../client/builtins.ts';
import { UsageError } from '../errors.ts';
import { microTime } from '../internal/microtime.ts';
import { nodeTimers } from '../internal/sleep.ts';
import type { Clock, Timer } from '../workqueue/clock.ts';

/** client-go's defaults: lease 15 s, renew deadline 10 s, retry 2 s. */
export const DEFAULT_LEASE_TIMINGS = {
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
} as const;

/** client-go's JitterFactor: the retry period is stretched by up to this much, and must fit the renew deadline. */
export const JITTER = 1.2;

/** A monotonic clock: `performance.now()` and Node's timers. */
export const monotonicClock = { now: () => performance.now(), setTimer: nodeTimers.setTimer };

/** Throws a `UsageError` (`InvalidArgument`) unless leaseDuration > renewDeadline > 1.2 × retryPeriod > 0. */
export function checkLeaseTimings(what: string, lease: number, renew: number, retry: number): void {
  for (const [name, ms] of [
    ['leaseDuration', lease],
    ['renewDeadline', renew],
    ['retryPeriod', retry],
  ] as const)
    if (!Number.isFinite(ms))
      throw new UsageError('InvalidArgument', `${what}: ${name} must be a number of milliseconds, got ${ms}`);
  if (!(retry > 0)) throw new UsageError('InvalidArgument', `${what}: retryPeriod must be positive, got ${retry} ms`);
  if (!(lease > renew))
    throw new UsageError(
      'InvalidArgument',
      `${what}: leaseDuration (${lease} ms) must be longer than renewDeadline (${renew} ms)`,
    );
  if (!(renew > JITTER * retry))
    throw new UsageError(
      'InvalidArgument',
      `${what}: renewDeadline (${renew} ms) must be longer than ${JITTER} × retryPeriod (${retry} ms)`,
    );
}

/** The right to act that a holder's renewals give; see the module comment. */
export class LeaseHold {
  readonly #renewDeadlineMs: number;
  readonly #clock: Clock;
  readonly #onLost: () => void;
  /** Start of the last successful renewal (monotonic); undefined when not held. */
  #renewedAt: number | undefined;
  #timer: Timer | undefined;

  constructor(options: { readonly renewDeadlineMs: number; readonly clock: Clock; readonly onLost: () => void }) {
    this.#renewDeadlineMs = options.renewDeadlineMs;
    this.#clock = options.clock;
    this.#onLost = options.onLost;
  }

  /** When the hold runs out (monotonic); undefined when it is not held. */
  get deadline(): number | undefined {
    return this.#renewedAt === undefined ? undefined : this.#renewedAt + this.#renewDeadlineMs;
  }

  /** Held now (no side effect: see `check`). */
  get held(): boolean {
    const deadline = this.deadline;
    return deadline !== undefined && this.#clock.now() < deadline;
  }

  /** As `held`; the first call that finds the deadline passed loses the hold then (`onLost` runs before it answers). */
  check(): boolean {
    if (this.held) return true;
    if (this.#renewedAt !== undefined) this.#lose();
    return false;
  }

  /**
   * A renewal (or the acquisition) that started at `startedAt` succeeded: held until `startedAt` + the renew deadline.
   * If that has passed already (the process was paused while it was in flight), the hold is lost instead, if it was
   * held. Answers whether it is held.
   */
  renewed(startedAt: number): boolean {
    const now = this.#clock.now();
    if (now >= startedAt + this.#renewDeadlineMs) {
      if (this.#renewedAt !== undefined) this.#lose();
      return false;
    }
    this.#renewedAt = startedAt;
    this.#arm();
    return true;
  }

  /** The deadline's timer: a timer that fires early (timers and the clock round differently) is set again. */
  #arm(): void {
    const deadline = this.deadline;
    this.#timer?.cancel();
    if (deadline === undefined) return;
    this.#timer = this.#clock.setTimer(Math.max(1, deadline - this.#clock.now()), () => {
      if (this.check()) this.#arm();
    });
  }

  /** Lets go without `onLost` (a graceful release). */
  release(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#renewedAt = undefined;
  }

  #lose(): void {
    this.release();
    this.#onLost();
  }
}

/** Judges other holders dead by how long their Leases have gone unchanged; see the module comment. */
export class LeaseJudge {
  readonly #clock: Clock;
  /** Each Lease's resourceVersion last seen, and when it was first seen (monotonic). */
  readonly #seen = new Map<string, { version: string; at: number }>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Takes in `lease`, as just read, under `key`. */
  observe(key: string, lease: Lease): void {
    const version = lease.metadata.resourceVersion ?? '';
    if (this.#seen.get(key)?.version !== version) this.#seen.set(key, { version, at: this.#clock.now() });
  }

  /** Forgets `key` (its Lease is gone). */
  forget(key: string): void {
    this.#seen.delete(key);
  }

  /** The keys seen. */
  keys(): string[] {
    return [...this.#seen.keys()];
  }

  /** Whether `key` was seen. */
  has(key: string): boolean {
    return this.#seen.has(key);
  }

  /** When `key`'s holder counts as dead if its Lease stays unchanged (monotonic); undefined if never seen. */
  expiresAt(key: string, durationMs: number): number | undefined {
    const s = this.#seen.get(key);
    return s === undefined ? undefined : s.at + durationMs;
  }

  /** Whether `key`'s Lease has gone unchanged for `durationMs` (false if never seen). */
  dead(key: string, durationMs: number): boolean {
    const at = this.expiresAt(key, durationMs);
    return at !== undefined && this.#clock.now() >= at;
  }

  /** The resourceVersion last seen of `key`'s Lease. */
  version(key: string): string | undefined {
    return this.#seen.get(key)?.version;
  }
}

/** The spec a holder writes: `previous` (the Lease's spec, undefined for a new Lease) with `holder` renewing it now. */
export function holderSpec(
  previous: Lease['spec'] | undefined,
  holder: string,
  leaseDurationMs: number,
  now: Date,
  isNew = previous === undefined,
): NonNullable<Lease['spec']> {
  const time = microTime(now);
  const taken = holder !== '' && (isNew || previous?.holderIdentity !== holder);
  return {
    ...previous,
    holderIdentity: holder,
    leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
    renewTime: time,
    ...(taken ? { acquireTime: time, leaseTransitions: isNew ? 0 : (previous?.leaseTransitions ?? 0) + 1 } : {}),
  };
}
