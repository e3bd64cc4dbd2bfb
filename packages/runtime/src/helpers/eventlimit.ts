/**
 * @module helpers/eventlimit
 * The EventRecorder's write budget (helpers/events): a token bucket per regarding object, the pace of client-go's
 * spam filter. Internal to the recorder.
 *
 * Guarantees: a bucket starts full (`burst` tokens) and regains one token every `refillMs`, never more than `burst`;
 * `take` spends a token only when a whole one is there (within rounding); `tokenAt` is the first whole millisecond at
 * which the bucket has a token again (now, for an object never seen). At most `cacheSize` buckets are kept: past it
 * the oldest goes (never the one just used), so a forgotten object starts full again.
 */

/** Rounding slack when a bucket refilled to exactly one token. */
const TOKEN_EPSILON = 1e-9;

/** The budget: burst, refill interval and how many objects to remember. */
export interface WriteBudgetOptions {
  /** Writes per object in a burst (default 25). */
  readonly burst?: number;
  /** How often an object's budget regains one write (default 5 min). */
  readonly refillMs?: number;
  /** How many objects to remember (default 4096). */
  readonly cacheSize?: number;
  /** The current time in ms. */
  readonly now: () => number;
}

/** A token bucket per object key. */
export class WriteBudget {
  readonly #o: WriteBudgetOptions;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(options: WriteBudgetOptions) {
    this.#o = options;
  }

  get #refillMs(): number {
    return this.#o.refillMs ?? 300_000;
  }

  /** Takes a write token of the object's bucket, if it has one now. */
  take(objectKey: string, now: number): boolean {
    const burst = this.#o.burst ?? 25;
    const b = this.#buckets.get(objectKey) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + (now - b.at) / this.#refillMs);
    b.at = now;
    this.#buckets.set(objectKey, b);
    if (b.tokens < 1 - TOKEN_EPSILON) return false;
    b.tokens = Math.max(0, b.tokens - 1);
    if (this.#buckets.size > (this.#o.cacheSize ?? 4096)) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest !== undefined && oldest !== objectKey) this.#buckets.delete(oldest);
    }
    return true;
  }

  /** When the object's bucket has a token (now, if it has one or is not tracked), in whole ms. */
  tokenAt(objectKey: string): number {
    const b = this.#buckets.get(objectKey);
    if (b === undefined) return this.#o.now();
    return Math.ceil(b.at + Math.max(0, 1 - b.tokens) * this.#refillMs);
  }
}
