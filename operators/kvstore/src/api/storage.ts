/**
 * @module api/storage
 * Storage sizes (`10Gi`, `500Mi`, `1G`, `1.5Gi`) as Kubernetes writes them, parsed to bytes so two sizes compare
 * exactly (bigint: no float rounding). A stopgap until `@opkit/runtime` ships `Quantity`: it knows the suffixes a
 * volume size uses (binary Ki…Ei, decimal k…E, none), not exponents or milli-units.
 */

/** What a storage size looks like (the CRD's `pattern`, and what `storageBytes` accepts). */
export const STORAGE_PATTERN = '^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$';

const FACTOR: Record<string, bigint> = {
  '': 1n,
  k: 1000n,
  M: 1000n ** 2n,
  G: 1000n ** 3n,
  T: 1000n ** 4n,
  P: 1000n ** 5n,
  E: 1000n ** 6n,
  Ki: 1024n,
  Mi: 1024n ** 2n,
  Gi: 1024n ** 3n,
  Ti: 1024n ** 4n,
  Pi: 1024n ** 5n,
  Ei: 1024n ** 6n,
};

/** The bytes a size stands for (rounded up to a whole byte), or `undefined` when it is not a storage size. */
export function storageBytes(size: string): bigint | undefined {
  const m = /^([0-9]+)(?:\.([0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(size);
  if (!m) return undefined;
  const [, whole = '0', fraction = '', suffix = ''] = m;
  const scale = 10n ** BigInt(fraction.length);
  const numerator = (BigInt(whole) * scale + BigInt(fraction || '0')) * (FACTOR[suffix] ?? 1n);
  return (numerator + scale - 1n) / scale;
}

/** Negative when `a` is smaller than `b`, 0 when equal, positive when larger; `undefined` if either is not a size. */
export function compareStorage(a: string, b: string): number | undefined {
  const x = storageBytes(a);
  const y = storageBytes(b);
  if (x === undefined || y === undefined) return undefined;
  return x < y ? -1 : x > y ? 1 : 0;
}
