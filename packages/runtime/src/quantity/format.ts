/**
 * @module quantity/format
 * The canonical text of a quantity, as apimachinery's `CanonicalizeBytes`: no precision lost, no fractional digits,
 * the largest exponent (or suffix) that allows that, and no sign unless negative.
 *
 * Guarantees, each as apimachinery: decimal SI and decimal exponents use an exponent that is a multiple of 3
 * (`1.5` → `1500m`, `1.2e3` → `1200`, `12e3` → `12e3`); binary SI is used only for integers of magnitude 1024 or more
 * (`0.5Gi` → `512Mi`, `1024Mi` → `1Gi`, `1.5Ki` → `1536`, `500Mi` + `0.5` → decimal SI), anything else is printed as
 * decimal SI. Zero is `0`. apimachinery's own gaps are kept, so the text is what the apiserver stores: a decimal-SI
 * exponent with no suffix (above `E`, 10^18) and a binary one above `Ei` print the number without a suffix
 * (`1000E` → `1`, as apimachinery prints it).
 */
import { abs, compare, type Decimal, removeFactors, roundUpTo, scaledInteger, stripped } from './decimal.ts';
import { BINARY_SI, DECIMAL_SI, type QuantityFormat } from './parse.ts';

/** The decimal-SI suffix of each power of ten: parse.ts's table, read backwards. */
const DECIMAL_SUFFIXES: ReadonlyMap<number, string> = new Map(
  Object.entries(DECIMAL_SI).map(([suffix, e]) => [e, suffix]),
);
const KIBI: Decimal = { m: 1024n, e: 0 };
/** The binary-SI suffix of each power of 1024 (`Ki` is 1024^1), from parse.ts's table. */
const BINARY_SUFFIXES: readonly string[] = [
  '',
  ...Object.entries(BINARY_SI)
    .sort(([, a], [, b]) => a - b)
    .map(([suffix]) => suffix),
];

/** The canonical text of `value` in `format` (apimachinery's `CanonicalizeBytes`, number and suffix joined). */
export function canonical(value: Decimal, format: QuantityFormat, what: () => string): string {
  if (value.m === 0n) return '0';
  if (format !== 'BinarySI') return decimal(value, format);
  if (compare({ m: abs(value.m), e: value.e }, KIBI) < 0) return decimal(value, 'DecimalSI');
  const integer = roundUpTo(value, 0);
  if (!integer.exact) return decimal(value, 'DecimalSI'); // binary SI would lose the fraction
  return binary(integer.value, what);
}

/** Decimal SI or a decimal exponent: all factors of 10 into the exponent, then down to a multiple of 3. */
function decimal(value: Decimal, format: 'DecimalSI' | 'DecimalExponent'): string {
  let { m, e } = stripped(value);
  const rest = ((e % 3) + 3) % 3;
  if (rest !== 0) {
    m *= 10n ** BigInt(rest);
    e -= rest;
  }
  const suffix = format === 'DecimalSI' ? (DECIMAL_SUFFIXES.get(e) ?? '') : e === 0 ? '' : `e${e}`;
  return `${m}${suffix}`;
}

/** Binary SI of an integer (exponent ≥ 0): all factors of 1024 into the suffix. */
function binary(value: Decimal, what: () => string): string {
  const integer = scaledInteger(value, 0, what);
  const { m, times } = removeFactors(integer, 1024n);
  return `${m}${BINARY_SUFFIXES[times] ?? ''}`;
}
