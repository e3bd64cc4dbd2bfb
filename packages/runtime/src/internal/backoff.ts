/**
 * @module internal/backoff
 * Exponential backoff with jitter: `initialMs × factor^n`, capped at `maxMs`, each delay stretched by a random
 * fraction up to `jitter` (so restarts of many clients spread out). `reset()` after a healthy period.
 */
export interface BackoffOptions {
  readonly initialMs?: number;
  readonly maxMs?: number;
  readonly factor?: number;
  /** 0 … 1: a delay d becomes d × (1 + jitter × random). */
  readonly jitter?: number;
  readonly random?: () => number;
}

export class Backoff {
  readonly #initial: number;
  readonly #max: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.#initial = options.initialMs ?? 800;
    this.#max = options.maxMs ?? 30_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0.5;
    this.#random = options.random ?? Math.random;
  }

  /** The next delay in ms (grows with each call until `reset`). */
  next(): number {
    const base = Math.min(this.#max, this.#initial * this.#factor ** this.#attempt);
    this.#attempt += 1;
    return Math.round(base * (1 + this.#jitter * this.#random()));
  }

  get attempts(): number {
    return this.#attempt;
  }

  reset(): void {
    this.#attempt = 0;
  }
}
