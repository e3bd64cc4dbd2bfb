/**
 * A test's stand-in for a paused process (SIGSTOP): a clock over a `FakeClock` whose timers that come due while it is
 * paused run only on resume, overdue, after whatever the test runs first (an overdue reconcile or watch event may well
 * come before the timer that notices a stale Lease).
 */
import type { FakeClock } from '../workqueue/clock.ts';

/** A clock that a pause stops; see the file comment. */
export class PausableClock {
  readonly #clock: FakeClock;
  #paused = false;
  readonly #due: (() => void)[] = [];

  constructor(clock: FakeClock) {
    this.#clock = clock;
  }

  now(): number {
    return this.#clock.now();
  }

  setTimer(ms: number, fn: () => void) {
    return this.#clock.setTimer(ms, () => (this.#paused ? this.#due.push(fn) : fn()));
  }

  pause(): void {
    this.#paused = true;
  }

  /** SIGCONT: `first` runs before any overdue timer. */
  resume(first: () => void): void {
    this.#paused = false;
    first();
    for (const fn of this.#due.splice(0)) fn();
  }
}
