/**
 * @module chaos/rng
 * A seeded pseudo-random generator (`seeded` of @opkit/testenv/chaos): the same seed gives the same trials, faults
 * and fuzz bodies.
 */
import { seeded } from '@opkit/testenv/chaos';

export class Rng {
  readonly #next: () => number;

  constructor(seed: number) {
    this.#next = seeded(seed);
  }

  /** A float in [0, 1). */
  next(): number {
    return this.#next();
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }
}
