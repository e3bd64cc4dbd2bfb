/**
 * @module internal/guards
 * A guard is a synchronous check that throws to refuse (a client's fence, asked right before each request goes out).
 * `allGuards` asks several in order, the first refusal winning; `passes` says whether one lets through now.
 */

/** A synchronous check that throws to refuse. */
export type Guard = () => void;

/** One guard asking each of `guards` in order (undefined when none is given). */
export function allGuards(...guards: readonly (Guard | undefined)[]): Guard | undefined {
  const present = guards.filter((g): g is Guard => g !== undefined);
  if (present.length <= 1) return present[0];
  return () => {
    for (const g of present) g();
  };
}

/** Whether `guard` lets through now: false when it throws, true when it does not or there is none. */
export function passes(guard: Guard | undefined): boolean {
  try {
    guard?.();
    return true;
  } catch {
    return false;
  }
}
