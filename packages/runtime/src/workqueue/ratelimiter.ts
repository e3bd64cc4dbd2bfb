/**
 * @module workqueue/ratelimiter
 * How long an item waits before it is retried. `ItemExponentialRateLimiter` backs off per item (base * 2^retries,
 * capped); `BucketRateLimiter` is one token bucket shared by all items (qps with a burst); `MaxOfRateLimiter` takes the
 * longest delay of several. `defaultControllerRateLimiter` is what controllers use: per-item backoff alone, 5 ms
 * doubling to 1000 s (controller-runtime's default with its priority queue), so a burst of failures is retried at
 * once, each item on its own schedule; `{ overall: { qps, burst } }` adds a shared bucket on top, as client-go's
 * `DefaultControllerRateLimiter` does (then 600 failures at once wait up to 50 s for their first retry at 10 qps).
 * Guarantees: `when()` counts a retry for the item and returns a finite delay in milliseconds >= 0; `forget()` resets
 * the item's count and backoff; `retries()` is the number of `when()` calls since the last `forget()`. The bucket
 * reserves a token on every `when()`, so the delays it hands out are spaced 1000/qps ms apart once the burst is spent.
 * Caveats: per-item state lives until `forget()` is called, so callers must forget items that succeeded or went away.
 * The bucket is shared and is not refunded by `forget()`. The bucket is the runtime's one token bucket
 * (internal/bucket.ts), the one the client's QPS/burst limit also uses. Bad arguments throw `UsageError`.
 */
import { UsageError } from '../errors.ts';
import { TokenBucket } from '../internal/bucket.ts';
import { type Clock, realClock } from './clock.ts';

/** How long an item waits before it is retried: counts retries per item and turns them into a delay. */
export interface RateLimiter<K> {
  /** The delay in ms before the item may be processed again; counts a retry. */
  when(item: K): number;
  /** Stops tracking the item (resets its backoff). */
  forget(item: K): void;
  /** How many times `when()` was called for the item since the last `forget()`. */
  retries(item: K): number;
}

/** Per-item exponential backoff: `baseMs * 2^retries`, capped at `maxMs`. */
export class ItemExponentialRateLimiter<K> implements RateLimiter<K> {
  readonly #baseMs: number;
  readonly #maxMs: number;
  readonly #failures = new Map<K, number>();

  /** @throws UsageError (`InvalidArgument`) when `baseMs` or `maxMs` is not >= 0. */
  constructor(baseMs = 5, maxMs = 1_000_000) {
    if (!(baseMs >= 0) || !(maxMs >= 0)) {
      throw new UsageError(
        'InvalidArgument',
        `ItemExponentialRateLimiter: baseMs and maxMs must be >= 0, got ${baseMs} and ${maxMs}`,
      );
    }
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  when(item: K): number {
    const failures = this.#failures.get(item) ?? 0;
    this.#failures.set(item, failures + 1);
    // The exponent is capped so a zero base never meets an infinite power (0 * Infinity is NaN).
    const backoff = this.#baseMs * 2 ** Math.min(failures, 1023);
    return Math.min(backoff, this.#maxMs);
  }

  forget(item: K): void {
    this.#failures.delete(item);
  }

  retries(item: K): number {
    return this.#failures.get(item) ?? 0;
  }
}

/**
 * One token bucket for all items: it holds up to `burst` tokens and refills at `qps` tokens per second. Each `when()`
 * takes a token, possibly one that will only exist in the future, and returns how long until it exists.
 */
export class BucketRateLimiter<K> implements RateLimiter<K> {
  readonly #bucket: TokenBucket;
  readonly #retries = new Map<K, number>();

  /** @throws UsageError (`InvalidArgument`) when `qps` is not > 0 or `burst` is not >= 1. */
  constructor(qps = 10, burst = 100, clock: Clock = realClock) {
    this.#bucket = new TokenBucket(qps, burst, () => clock.now(), 'BucketRateLimiter');
  }

  when(item: K): number {
    this.#retries.set(item, (this.#retries.get(item) ?? 0) + 1);
    return this.#bucket.reserve();
  }

  forget(item: K): void {
    this.#retries.delete(item);
  }

  retries(item: K): number {
    return this.#retries.get(item) ?? 0;
  }
}

/** Asks every limiter (each counts the retry) and returns the longest delay. */
export class MaxOfRateLimiter<K> implements RateLimiter<K> {
  readonly #limiters: readonly RateLimiter<K>[];

  constructor(...limiters: RateLimiter<K>[]) {
    this.#limiters = limiters;
  }

  when(item: K): number {
    let delay = 0;
    for (const limiter of this.#limiters) delay = Math.max(delay, limiter.when(item));
    return delay;
  }

  forget(item: K): void {
    for (const limiter of this.#limiters) limiter.forget(item);
  }

  retries(item: K): number {
    let retries = 0;
    for (const limiter of this.#limiters) retries = Math.max(retries, limiter.retries(item));
    return retries;
  }
}

/** Options of `defaultControllerRateLimiter`. */
export interface ControllerRateLimiterOptions {
  /**
   * A token bucket shared by all items on top of the per-item backoff: at most `qps` retries per second after a burst
   * of `burst` (client-go's `DefaultControllerRateLimiter` uses 10 and 100). Default: none.
   */
  readonly overall?: { readonly qps: number; readonly burst: number };
}

/**
 * Per-item backoff from 5 ms doubling to 1000 s; with `overall`, also at most `qps` retries per second after a burst
 * (the bucket runs on `clock`).
 */
export function defaultControllerRateLimiter<K>(
  clock?: Clock,
  options: ControllerRateLimiterOptions = {},
): RateLimiter<K> {
  const perItem = new ItemExponentialRateLimiter<K>(5, 1_000_000);
  if (options.overall === undefined) return perItem;
  const { qps, burst } = options.overall;
  return new MaxOfRateLimiter<K>(perItem, new BucketRateLimiter<K>(qps, burst, clock ?? realClock));
}
