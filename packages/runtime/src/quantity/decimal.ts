/**
 * @module quantity/decimal
 * Exact decimal numbers `m × 10^e` (a BigInt mantissa and an integer exponent), the arithmetic a quantity needs and
 * nothing more: compare, add, round away from zero to a scale, and remove factors.
 *
 * Guarantees: every result is exact (no float is ever involved) or rounded away from zero where the function says so.
 * `compare` and `digits` never expand a power of ten, so they stay cheap for any exponent (`1e900000` vs `1`);
 * operations that must expand one (`add` of far-apart exponents, `toInteger`) refuse with a `QuantityError`
 * (`QuantityOutOfRange`) beyond {@link MAX_QUANTITY_DIGITS} digits instead of exhausting memory, where apimachinery's
 * Go code would try.
 */
import { QuantityError } from './errors.ts';

/** An exact decimal number: `m × 10^e`. */
export interface Decimal {
  /** The unscaled value (its sign is the number's). */
  readonly m: bigint;
  /** The power of ten it is scaled by. */
  readonly e: number;
}

/**
 * The most decimal digits an operation expands a power of ten to. Real quantities have at most a few dozen digits
 * (int64 values at nano precision); the bound only stops an absurd exponent (`1e900000`) from exhausting memory.
 */
export const MAX_QUANTITY_DIGITS = 10_000;

const ZERO: Decimal = { m: 0n, e: 0 };

/** 10^n for 0 ≤ n ≤ MAX_QUANTITY_DIGITS; `what` names the operation in the error beyond. */
export function pow10(n: number, what: () => string): bigint {
  if (n > MAX_QUANTITY_DIGITS) {
    const text = what();
    throw new QuantityError(
      'QuantityOutOfRange',
      text,
      `${text}: the exact result needs more than ${MAX_QUANTITY_DIGITS} decimal digits`,
    );
  }
  return 10n ** BigInt(n);
}

/** |v| */
export function abs(v: bigint): bigint {
  return v < 0n ? -v : v;
}

/** The number of decimal digits of |m| (1 for 0). */
export function digits(m: bigint): number {
  return abs(m).toString().length;
}

/** `m` without its trailing decimal zeros, and how many there were (0 stays 0). */
export function removeFactors(m: bigint, factor: bigint): { m: bigint; times: number } {
  let times = 0;
  let v = m;
  while (v !== 0n && v % factor === 0n) {
    v /= factor;
    times++;
  }
  return { m: v, times };
}

/** The same number with no trailing zeros in its mantissa (0 is `0 × 10^0`). */
export function stripped(d: Decimal): Decimal {
  if (d.m === 0n) return ZERO;
  const { m, times } = removeFactors(d.m, 10n);
  return { m, e: d.e + times };
}

/** -1, 0 or 1 as the number is negative, zero or positive. */
export function signOf(d: Decimal): -1 | 0 | 1 {
  return d.m < 0n ? -1 : d.m > 0n ? 1 : 0;
}

/** -1, 0 or 1 as `a` is less than, equal to or greater than `b`; never expands a power of ten beyond the operands. */
export function compare(a: Decimal, b: Decimal): -1 | 0 | 1 {
  const sa = signOf(a);
  const sb = signOf(b);
  if (sa !== sb) return sa < sb ? -1 : 1;
  if (sa === 0) return 0;
  const x = stripped(a);
  const y = stripped(b);
  // Same sign: the magnitude with more digits before the decimal point is the larger one.
  const mx = digits(x.m) + x.e;
  const my = digits(y.m) + y.e;
  let magnitude: -1 | 0 | 1;
  if (mx !== my) magnitude = mx < my ? -1 : 1;
  else {
    // Equal magnitudes: the exponents differ by at most the operands' digit counts.
    const e = Math.min(x.e, y.e);
    const ux = abs(x.m) * 10n ** BigInt(x.e - e);
    const uy = abs(y.m) * 10n ** BigInt(y.e - e);
    magnitude = ux === uy ? 0 : ux < uy ? -1 : 1;
  }
  return sa > 0 ? magnitude : magnitude === 0 ? 0 : magnitude === 1 ? -1 : 1;
}

/** a + b, exact; `what` names the operation if the operands are too far apart to align. */
export function add(a: Decimal, b: Decimal, what: () => string): Decimal {
  if (b.m === 0n) return a;
  if (a.m === 0n) return b;
  const e = Math.min(a.e, b.e);
  return { m: a.m * pow10(a.e - e, what) + b.m * pow10(b.e - e, what), e };
}

/** -d */
export function negate(d: Decimal): Decimal {
  return { m: -d.m, e: d.e };
}

/**
 * `d` rounded away from zero to a multiple of 10^scale, and whether that was exact. An exponent already at or above
 * `scale` is kept as it is.
 */
export function roundUpTo(d: Decimal, scale: number): { value: Decimal; exact: boolean } {
  if (d.e >= scale || d.m === 0n) return { value: d, exact: true };
  const shift = scale - d.e;
  if (shift > digits(d.m)) return { value: { m: d.m < 0n ? -1n : 1n, e: scale }, exact: false };
  const divisor = 10n ** BigInt(shift);
  const q = d.m / divisor; // truncates toward zero
  const exact = q * divisor === d.m;
  return { value: { m: exact ? q : d.m < 0n ? q - 1n : q + 1n, e: scale }, exact };
}

/** The integer `d × 10^-scale`, rounded away from zero (`scale` 0: the value, -3: milli-units). */
export function scaledInteger(d: Decimal, scale: number, what: () => string): bigint {
  if (d.m === 0n) return 0n;
  const shifted: Decimal = { m: d.m, e: d.e - scale };
  const { value } = roundUpTo(shifted, 0);
  return value.e === 0 ? value.m : value.m * pow10(value.e, what);
}
