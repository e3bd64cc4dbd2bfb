/**
 * @module internal/defined
 * Options objects under `exactOptionalPropertyTypes`: `defined(o)` is `o` without its undefined values, so optional
 * settings pass through without one spread per key.
 */

/** A copy of `obj` without the keys whose value is `undefined`. */
export function defined<T extends object>(obj: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}
