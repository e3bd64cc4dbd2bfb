/**
 * @module internal/size
 * What a store's objects weigh, estimated for `opkit_cache_bytes`: the mean size of a sample of them as UTF-8 JSON,
 * times their number.
 *
 * Guarantees: at most `sample` objects are serialized, spread evenly over the store (the k-th is object
 * `floor(k × count / sample)`), and none is copied or changed; the estimate is exact when the objects are the same size, and 0 for an empty store. It
 * is the objects' JSON size, not their heap size: V8 keeps a cached object in more bytes than its JSON (docs/runtime.md,
 * Metrics, has the ratio measured for pods).
 */

/** The estimated UTF-8 JSON bytes of `count` objects, from a sample of `objects` (see the module comment). */
export function estimatedBytes(objects: Iterable<unknown>, count: number, sample = 64): number {
  if (count <= 0) return 0;
  const want = Math.min(sample, count);
  let bytes = 0;
  let taken = 0;
  let i = 0;
  for (const obj of objects) {
    // the k-th of `want` picks is object floor(k * count / want): spread over the whole store
    if (i++ !== Math.floor((taken * count) / want)) continue;
    bytes += Buffer.byteLength(JSON.stringify(obj) ?? '', 'utf8');
    if (++taken === want) break;
  }
  return taken === 0 ? 0 : Math.round((bytes / taken) * count);
}
