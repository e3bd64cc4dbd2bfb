/**
 * @module quantity/parse
 * Reads a quantity's text as apimachinery's `ParseQuantity` does (k8s.io/apimachinery/pkg/api/resource): the same
 * grammar (`<sign><digits>.<digits><suffix>`, leading zeros ignored, `1.` and `.5` allowed, no whitespace), the same
 * suffixes, the same value and format, and the same three errors.
 *
 * Guarantees, each as apimachinery: precision below nano (10^-9) is rounded up, away from zero (`0.1n` is `1n`,
 * `-0.1n` is `-1n`); a binary-SI quantity beyond 2^63-1 in magnitude is capped there (`16Ei` is
 * `9223372036854775807`), a decimal one is not capped; a binary-SI quantity strictly between -1 and 1 becomes
 * decimal SI (`0.000000000001Ki` is `2n`); an exponent is read as a 64-bit integer and kept as a 32-bit one (as Go's
 * `int32(…)` conversion wraps). The text is remembered for formatting exactly when apimachinery remembers it (its
 * fast path, for a text it deems canonical), so `toString()` gives what the apiserver stores.
 */
import { compare, type Decimal, roundUpTo } from './decimal.ts';
import { QUANTITY_SHAPE, QuantityError, type QuantityErrorCode } from './errors.ts';

/** How a quantity is written: with a binary-SI suffix, a decimal-SI suffix, or a decimal exponent. */
export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/** A parsed quantity: its exact value, its format, and the text to print for it when apimachinery keeps the text. */
export interface Parsed {
  readonly value: Decimal;
  readonly format: QuantityFormat;
  readonly text: string | undefined;
}

/** The parts of a quantity's text, as apimachinery's scanner splits it. */
interface Scanned {
  readonly positive: boolean;
  /** The signed number without its suffix (what apimachinery's slow path reads as a decimal). */
  readonly value: string;
  /** The integer digits, leading zeros removed ('0' if none). */
  readonly num: string;
  /** The fraction digits ('' if none). */
  readonly denom: string;
  readonly suffix: string;
}

const SUFFIX_CHARS = 'eEinumkKMGTP';
const MAX_INT64 = (1n << 63n) - 1n;
/** The digits an int64 always holds (apimachinery's `maxInt64Factors`). */
const MAX_INT64_DIGITS = 18;
const NANO = -9;

/** Each decimal-SI suffix and its power of ten (format.ts prints by the same table). */
export const DECIMAL_SI: Readonly<Record<string, number>> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
/** Each binary-SI suffix and its power of two. */
export const BINARY_SI: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/** The end of the run of digits that starts at `from`. */
function digitsEnd(text: string, from: number): number {
  let i = from;
  while (isDigit(text[i])) i++;
  return i;
}

function fail(code: QuantityErrorCode, text: string, why: string): never {
  throw new QuantityError(code, text, `quantity ${JSON.stringify(text)} is not valid (${why}): ${QUANTITY_SHAPE}`);
}

/** Splits `text` as apimachinery's `parseQuantityString`, or fails with `InvalidQuantity`. */
function scan(text: string): Scanned {
  const positive = text[0] !== '-';
  let pos = text[0] === '-' || text[0] === '+' ? 1 : 0;
  while (text[pos] === '0') pos++;
  if (pos >= text.length) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  const numEnd = digitsEnd(text, pos);
  const num = text.slice(pos, numEnd) || '0';
  pos = numEnd;
  let denom = '';
  if (text[pos] === '.') {
    const denomEnd = digitsEnd(text, pos + 1);
    denom = text.slice(pos + 1, denomEnd);
    pos = denomEnd;
  }
  const value = text.slice(0, pos);
  const suffixStart = pos;
  while (pos < text.length && SUFFIX_CHARS.includes(text[pos] as string)) pos++;
  if (text[pos] === '-' || text[pos] === '+') pos++;
  if (digitsEnd(text, pos) < text.length) fail('InvalidQuantity', text, 'unexpected characters after the number');
  return { positive, value, num, denom, suffix: text.slice(suffixStart) };
}

/** A suffix's base (2 or 10), exponent and format, or fails with `InvalidQuantitySuffix`. */
function interpret(suffix: string, text: string): { base: 2 | 10; exponent: number; format: QuantityFormat } {
  const decimal = DECIMAL_SI[suffix];
  if (decimal !== undefined) return { base: 10, exponent: decimal, format: 'DecimalSI' };
  const binary = BINARY_SI[suffix];
  if (binary !== undefined) return { base: 2, exponent: binary, format: 'BinarySI' };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const parsed = BigInt(suffix.slice(1));
    if (parsed <= MAX_INT64 && parsed >= -MAX_INT64 - 1n) {
      return { base: 10, exponent: Number(BigInt.asIntN(32, parsed)), format: 'DecimalExponent' };
    }
  }
  return fail('InvalidQuantitySuffix', text, `unknown suffix ${JSON.stringify(suffix)}`);
}

/**
 * Parses `text` as apimachinery's `ParseQuantity`: its value, format, and (when apimachinery keeps it) the text
 * itself as the string to print. Throws a `QuantityError` naming the text.
 */
export function parseQuantity(text: string): Parsed {
  if (text.length === 0) fail('InvalidQuantity', text, 'empty');
  if (text === '0') return { value: { m: 0n, e: 0 }, format: 'DecimalSI', text };
  const s = scan(text);
  const { base, exponent, format } = interpret(s.suffix, text);
  return fastPath(s, base, exponent, format, text) ?? slowPath(s, base, exponent, format, text);
}

/**
 * apimachinery's int64 fast path: few enough digits, no precision below nano, no overflow. Its value is exact; it
 * also decides whether the text is kept as the canonical string. Undefined when the slow path applies.
 */
function fastPath(
  s: Scanned,
  base: 2 | 10,
  exponent: number,
  format: QuantityFormat,
  text: string,
): Parsed | undefined {
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (base === 10) {
    scale = exponent;
    precision = MAX_INT64_DIGITS - (s.num.length + s.denom.length);
  } else if (s.denom.length === 0) {
    mantissa = 1n << BigInt(exponent);
    // apimachinery's estimate of the decimal digits 2^exponent takes: exponent * 3 / 10
    precision = 15 - s.num.length - Math.trunc((exponent * 3) / 10) - 1;
  } else {
    precision = -1;
  }
  if (precision < 0) return undefined;
  scale = (scale - s.denom.length) | 0; // Go's int32 arithmetic
  if (scale < NANO) return undefined;
  const shifted = s.num + s.denom;
  const unsigned = BigInt(shifted) * mantissa;
  if (unsigned > MAX_INT64) return undefined;
  const value: Decimal = { m: s.positive ? unsigned : -unsigned, e: scale };
  return { value, format, text: keepsText(shifted, BigInt(shifted), exponent, scale, format) ? text : undefined };
}

/** apimachinery's test of whether a fast-path text is already canonical (and so is printed as it was written). */
function keepsText(shifted: string, digits: bigint, exponent: number, scale: number, format: QuantityFormat): boolean {
  if (format === 'BinarySI') return exponent % 10 === 0 && (digits & 7n) !== 0n;
  return scale % 3 === 0 && !shifted.endsWith('000') && shifted[0] !== '0';
}

/** apimachinery's arbitrary-precision path: round up to nano, cap binary SI at int64, small binary SI → decimal. */
function slowPath(s: Scanned, base: 2 | 10, exponent: number, format: QuantityFormat, text: string): Parsed {
  const unsigned = s.num + s.denom;
  if (!/[0-9]/.test(s.value)) fail('InvalidQuantityNumber', text, 'the number has no digit');
  let magnitude: Decimal = { m: BigInt(unsigned), e: -s.denom.length };
  if (base === 10) magnitude = { m: magnitude.m, e: magnitude.e + exponent };
  else magnitude = { m: magnitude.m << BigInt(exponent), e: magnitude.e };
  magnitude = roundUpTo(magnitude, NANO).value;
  let result = format;
  if (format === 'BinarySI') {
    if (compare(magnitude, { m: MAX_INT64, e: 0 }) > 0) magnitude = { m: MAX_INT64, e: 0 };
    if (magnitude.m !== 0n && compare(magnitude, { m: 1n, e: 0 }) < 0) result = 'DecimalSI';
  }
  const value = s.positive ? magnitude : { m: -magnitude.m, e: magnitude.e };
  return { value, format: result, text: undefined };
}
