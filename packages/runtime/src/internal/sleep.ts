/**
 * @module internal/sleep
 * An abortable sleep that never rejects: it resolves after `ms`, or as soon as `signal` aborts (then early), and
 * leaves no timer or listener behind either way. Timers come from an injectable source (a test's fake clock), by
 * default Node's own. `withTimeout` bounds a call by a timer of such a source; `within(work, ms)` tells whether work settled in time;
 * `untilAborted(signal)` waits for an abort.
 */

/** Where timers come from (the work queue's `Clock` fits). */
export interface TimerSource {
  setTimer(ms: number, fn: () => void): { cancel(): void };
}

/** Node's own timers (ref'd: a pending one keeps the process alive). */
export const nodeTimers: TimerSource = {
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
};

export function sleep(ms: number, signal: AbortSignal, timers: TimerSource = nodeTimers): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      timer.cancel();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = timers.setTimer(Math.max(0, ms), done);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Resolves when `signal` aborts (at once if it has); never rejects. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) =>
    signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true }),
  );
}

/**
 * Runs `fn` with a signal that aborts with a `TimeoutError` after `ms` (as `AbortSignal.timeout`, but on `timers`) or
 * when `signal` does; the timer is cancelled once `fn` settles.
 */
export async function withTimeout<T>(
  ms: number,
  fn: (signal: AbortSignal) => Promise<T>,
  timers: TimerSource = nodeTimers,
  signal?: AbortSignal,
): Promise<T> {
  const ctl = new AbortController();
  const timer = timers.setTimer(Math.max(0, Math.ceil(ms)), () =>
    ctl.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')),
  );
  try {
    return await fn(signal ? AbortSignal.any([signal, ctl.signal]) : ctl.signal);
  } finally {
    timer.cancel();
  }
}

/** True when `work` settles within `ms`, false if the time ran out first (the work goes on, unawaited). */
export async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  const cap = new AbortController();
  const settled = await Promise.race([
    work.then(
      () => true,
      () => true,
    ),
    sleep(ms, cap.signal).then(() => false),
  ]);
  cap.abort();
  return settled;
}
