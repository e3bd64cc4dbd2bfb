/**
 * @module internal/bucket
 * The one token bucket of the runtime, behind both the work queue's `BucketRateLimiter` (how long a retry waits) and
 * the client's QPS/burst limit (how long a request waits before it is sent).
 *
 * Guarantees: the bucket holds at most `burst` tokens and refills at `qps` tokens per second of its time source. Each
 * `reserve()` takes a token, possibly one that only exists in the future, and returns how long until it exists (ms,
 * 0 when one was there): once the burst is spent, reservations are spaced 1000/qps ms apart. A reserved token is
 * never given back (an aborted `take()` keeps its place). Time that runs backwards refills nothing.
 */
import { UsageError } from '../errors.ts';
import { sleep } from './sleep.ts';

/** A token bucket: `burst` tokens at most, refilled at `qps` per second of `now()` (milliseconds). */
export class TokenBucket {
  readonly #qps: number;
  readonly #burst: number;
  readonly #now: () => number;
  /** Tokens at `#last`; negative when future tokens are already reserved. */
  #tokens: number;
  #last: number;

  /**
   * A full bucket. `owner` names the caller in the message of the `UsageError` (`InvalidArgument`) thrown when `qps`
   * is not > 0 or `burst` is not >= 1.
   */
  constructor(qps: number, burst: number, now: () => number, owner: string) {
    if (!(qps > 0)) throw new UsageError('InvalidArgument', `${owner}: qps must be > 0, got ${qps}`);
    if (!(burst >= 1)) throw new UsageError('InvalidArgument', `${owner}: burst must be >= 1, got ${burst}`);
    this.#qps = qps;
    this.#burst = burst;
    this.#now = now;
    this.#tokens = burst;
    this.#last = now();
  }

  /** Takes a token; returns the milliseconds until it exists (0: at once). */
  reserve(): number {
    const now = this.#now();
    if (now > this.#last) {
      this.#tokens = Math.min(this.#burst, this.#tokens + ((now - this.#last) * this.#qps) / 1000);
      this.#last = now;
    }
    this.#tokens -= 1;
    if (this.#tokens >= 0) return 0;
    return (-this.#tokens * 1000) / this.#qps;
  }

  /** Takes a token and waits until it exists; rejects with `signal`'s reason as soon as it aborts. */
  async take(signal: AbortSignal | undefined): Promise<void> {
    const wait = this.reserve();
    if (wait === 0) return;
    if (!signal) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      return;
    }
    await sleep(wait, signal);
    if (signal.aborted) throw signal.reason;
  }
}
