/**
 * @module workqueue/clock
 * The time source of the work queue and rate limiters: `now()` in milliseconds and one-shot timers. `realClock` uses
 * `Date.now` and `setTimeout`; `FakeClock` only moves when a test calls `advance()`.
 * Guarantees: `realClock` timers are unref()'d (they never keep the process alive) and may be longer than Node's
 * 2^31-1 ms setTimeout limit (they are chained). `FakeClock.advance()` fires due timers synchronously, in order of due
 * time (then of creation), with `now()` equal to each timer's due time while it runs; timers created while advancing
 * fire in the same call if they fall due within it.
 * Caveats: `realClock.now()` is wall-clock time and can jump if the system clock is changed. Because its timers are
 * unref()'d, something else (a watch, a server) must keep the process alive while timers are pending.
 */
import { UsageError } from '../errors.ts';

/** A pending one-shot timer of a `Clock`. */
export interface Timer {
  /** Stops the timer; calling it after the timer fired, or twice, does nothing. */
  cancel(): void;
}

/**
 * A time source: the current time in milliseconds and one-shot timers. `realClock` in production, `FakeClock` in tests.
 */
export interface Clock {
  /** The current time in milliseconds. */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now (at once, on a later turn, if `ms` <= 0). */
  setTimer(ms: number, fn: () => void): Timer;
}

/** The longest delay setTimeout accepts; longer delays are chained. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** A delay as given, with negative and NaN delays meaning "at once". */
function nonNegative(ms: number): number {
  return Number.isNaN(ms) ? 0 : Math.max(ms, 0);
}

function setRealTimer(ms: number, fn: () => void): Timer {
  let handle: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;
  const arm = (remaining: number): void => {
    const step = Math.min(remaining, MAX_TIMEOUT_MS);
    handle = setTimeout(() => {
      handle = undefined;
      if (cancelled) return;
      if (remaining > MAX_TIMEOUT_MS) arm(remaining - step);
      else fn();
    }, step);
    handle.unref();
  };
  arm(nonNegative(ms));
  return {
    cancel() {
      cancelled = true;
      if (handle !== undefined) clearTimeout(handle);
      handle = undefined;
    },
  };
}

/** Real time: `Date.now()` and unref()'d `setTimeout`. */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimer: setRealTimer,
};

interface FakeTimer {
  readonly at: number;
  readonly seq: number;
  readonly fn: () => void;
}

/** A clock for tests: time stands still until `advance()` moves it. */
export class FakeClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: FakeTimer[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): Timer {
    const timer: FakeTimer = { at: this.#now + nonNegative(ms), seq: this.#seq++, fn };
    this.#timers.push(timer);
    return {
      cancel: () => {
        const i = this.#timers.indexOf(timer);
        if (i >= 0) this.#timers.splice(i, 1);
      },
    };
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, in time order.
   *
   * @throws UsageError (`InvalidArgument`) when `ms` is not >= 0.
   */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new UsageError('InvalidArgument', `FakeClock.advance: ms must be >= 0, got ${ms}`);
    const target = this.#now + ms;
    for (;;) {
      const next = this.#nextDue(target);
      if (next === undefined) break;
      this.#timers.splice(next.index, 1);
      this.#now = next.timer.at;
      next.timer.fn();
    }
    this.#now = target;
  }

  /** How many timers are set and have neither fired nor been cancelled. */
  pendingTimers(): number {
    return this.#timers.length;
  }

  #nextDue(target: number): { timer: FakeTimer; index: number } | undefined {
    let best: { timer: FakeTimer; index: number } | undefined;
    this.#timers.forEach((timer, index) => {
      if (timer.at > target) return;
      if (
        best === undefined ||
        timer.at < best.timer.at ||
        (timer.at === best.timer.at && timer.seq < best.timer.seq)
      ) {
        best = { timer, index };
      }
    });
    return best;
  }
}
