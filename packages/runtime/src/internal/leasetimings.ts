/**
 * @module internal/leasetimings
 * The timings of a Lease-based election (leader election, sharding's member Leases), as client-go's: their defaults,
 * a monotonic clock to measure them on, and the check client-go makes — leaseDuration > renewDeadline > 1.2 ×
 * retryPeriod > 0, each a finite number, else a `UsageError` (`InvalidArgument`) naming the one that fails.
 */
import { UsageError } from '../errors.ts';
import { nodeTimers } from './sleep.ts';

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
