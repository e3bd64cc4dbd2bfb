/**
 * @module quantity/quantity
 * `Quantity`: a Kubernetes resource quantity (`1Gi`, `500m`, `1.5e3`), immutable and exact, with the semantics of
 * apimachinery's `resource.Quantity`: the same parsing and rounding (quantity/parse), the same canonical text
 * (quantity/format), and comparison and arithmetic on the exact values.
 *
 * Guarantees: no float is involved anywhere but `toNumber()`; `cmp`/`equals` compare values, not texts (`1Gi`
 * equals `1024Mi`), and never fail on quantities (a text operand is parsed first, and may throw as `parse`);
 * `add`/`sub` return new quantities, keep the left operand's format unless it is zero (then the right one's), as
 * apimachinery's `Add`/`Sub`; `toString()` and `toJSON()` give what the apiserver
 * would store for the parsed text (its canonical form, or the text itself when apimachinery keeps it, e.g. `1.500`).
 * `value()`/`milliValue()` are exact BigInts, rounded away from zero, where Go's int64 would wrap. Caveat: the
 * apiserver rounds the quantities of a resource list (requests, limits, quotas) up to milli-units before storing
 * them; `roundUp(-3).toString()` is what it stores for those.
 *
 * ```ts
 * import { Quantity } from '@opkit/runtime/quantity';
 *
 * const requested = Quantity.parse('1536Mi');
 * if (requested.cmp('1Gi') > 0) console.log(`${requested} is more than 1Gi`); // "1536Mi is more than 1Gi"
 * const bytes: bigint = requested.value(); // 1610612736n
 * ```
 */
import { UsageError } from '../errors.ts';
import { add, compare, type Decimal, negate, roundUpTo, scaledInteger, signOf } from './decimal.ts';
import { QUANTITY_SHAPE, QuantityError } from './errors.ts';
import { canonical } from './format.ts';
import { parseQuantity, type QuantityFormat } from './parse.ts';

/** What the operations of a quantity take: a `Quantity`, or a text or number `Quantity.parse` reads. */
export type QuantityLike = Quantity | string | number;

/** `m·10^e`, for error messages that must not format (and so expand) a huge operand. */
function describe(d: Decimal): string {
  return d.e === 0 ? `${d.m}` : `${d.m}e${d.e}`;
}

/**
 * A Kubernetes resource quantity, immutable and exact (see the module comment).
 * @showModuleComment
 */
export class Quantity {
  /** How the quantity is written: `BinarySI` (`Ki`…`Ei`), `DecimalSI` (`n`…`E`, or none) or `DecimalExponent`. */
  readonly format: QuantityFormat;
  readonly #value: Decimal;
  #text: string | undefined;

  private constructor(value: Decimal, format: QuantityFormat, text: string | undefined) {
    this.#value = value;
    this.format = format;
    this.#text = text;
  }

  /**
   * Reads a quantity as the apiserver does (apimachinery's `ParseQuantity`): `1Gi`, `500m`, `1.5e3`, `-2k`. A number
   * is read as its JSON text (`1500` as `"1500"`, `1e21` as `"1e+21"`), as the apiserver reads a JSON number.
   * Precision below nano is rounded up; binary SI beyond 2^63-1 is capped.
   * @throws QuantityError `InvalidQuantity`, `InvalidQuantityNumber` or `InvalidQuantitySuffix`, naming the text and
   * what a valid quantity looks like.
   */
  static parse(text: string | number): Quantity {
    if (typeof text === 'number') {
      if (!Number.isFinite(text)) {
        throw new QuantityError('InvalidQuantity', String(text), `${text} is not a quantity: ${QUANTITY_SHAPE}`);
      }
      return Quantity.parse(JSON.stringify(text));
    }
    if (typeof text !== 'string') {
      const what = typeof text;
      throw new QuantityError('InvalidQuantity', what, `a ${what} is not a quantity: ${QUANTITY_SHAPE}`);
    }
    const parsed = parseQuantity(text);
    return new Quantity(parsed.value, parsed.format, parsed.text);
  }

  /**
   * The integer `value` (`NewQuantity` in apimachinery), printed in `format`: `Quantity.of(1073741824, 'BinarySI')`
   * is `1Gi`, `Quantity.of(1500)` is `1500`.
   * @throws UsageError `InvalidArgument` for a number that is not a safe integer (use a BigInt, or `parse`).
   */
  static of(value: bigint | number, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity({ m: integer(value, 'Quantity.of'), e: 0 }, format, undefined);
  }

  /**
   * The quantity `value` thousandths (`NewMilliQuantity`): `Quantity.ofMilli(250)` is `250m`. A binary-SI one with a
   * fraction prints as decimal SI, as apimachinery.
   * @throws UsageError `InvalidArgument`, as {@link Quantity.of}.
   */
  static ofMilli(value: bigint | number, format: QuantityFormat = 'DecimalSI'): Quantity {
    return new Quantity({ m: integer(value, 'Quantity.ofMilli'), e: -3 }, format, undefined);
  }

  /** -1, 0 or 1 as this quantity is less than, equal to or greater than `other` (by value: `1Gi` equals `1024Mi`). */
  cmp(other: QuantityLike): -1 | 0 | 1 {
    return compare(this.#value, of(other).#value);
  }

  /** Whether this quantity has the same value as `other` (`cmp(other) === 0`). */
  equals(other: QuantityLike): boolean {
    return this.cmp(other) === 0;
  }

  /**
   * This quantity plus `other`, exactly, as a new quantity in this one's format (in `other`'s if this one is zero).
   * @throws QuantityError `QuantityOutOfRange` when the exponents are so far apart that the exact sum needs more
   * than `MAX_QUANTITY_DIGITS` digits.
   */
  add(other: QuantityLike): Quantity {
    const y = of(other);
    const format = this.isZero() ? y.format : this.format;
    const sum = add(this.#value, y.#value, () => `${describe(this.#value)} + ${describe(y.#value)}`);
    return new Quantity(sum, format, undefined);
  }

  /**
   * This quantity minus `other`, exactly, as a new quantity in this one's format (in `other`'s if this one is zero).
   * @throws QuantityError `QuantityOutOfRange`, as {@link Quantity.add}.
   */
  sub(other: QuantityLike): Quantity {
    const y = of(other);
    const format = this.isZero() ? y.format : this.format;
    const difference = add(this.#value, negate(y.#value), () => `${describe(this.#value)} - ${describe(y.#value)}`);
    return new Quantity(difference, format, undefined);
  }

  /**
   * This quantity times the integer `factor`, exactly, in the same format (apimachinery's `Mul`, which cannot
   * overflow here): the storage of `replicas` volumes is `size.mul(replicas)`.
   * @throws UsageError `InvalidArgument` for a number that is not a safe integer.
   */
  mul(factor: bigint | number): Quantity {
    const f = integer(factor, 'Quantity.mul');
    return new Quantity({ m: this.#value.m * f, e: this.#value.e }, this.format, undefined);
  }

  /** The quantity with the opposite sign, in the same format. */
  neg(): Quantity {
    return new Quantity(negate(this.#value), this.format, undefined);
  }

  /**
   * The quantity rounded away from zero to a multiple of 10^scale (`-3`: milli-units), in the same format, as
   * apimachinery's `RoundUp`: a quantity already that coarse is returned as it is (its text kept). The apiserver
   * applies `roundUp(-3)` to every quantity of a resource list (a pod's requests and limits, a ResourceQuota's
   * `hard`, a LimitRange), so `Quantity.parse(x).roundUp(-3).toString()` is what it stores for those.
   */
  roundUp(scale: number): Quantity {
    const s = Math.trunc(scale);
    if (this.#value.e >= s || this.#value.m === 0n) return this;
    return new Quantity(roundUpTo(this.#value, s).value, this.format, undefined);
  }

  /** Whether the value is zero. */
  isZero(): boolean {
    return this.#value.m === 0n;
  }

  /** -1, 0 or 1 as the value is negative, zero or positive. */
  sign(): -1 | 0 | 1 {
    return signOf(this.#value);
  }

  /**
   * The value as an integer, rounded away from zero (`1500m` → 2n, `-1500m` → -2n), exact at any size (Go's
   * `Value()` is an int64 and wraps).
   * @throws QuantityError `QuantityOutOfRange` for a value of more than `MAX_QUANTITY_DIGITS` digits.
   */
  value(): bigint {
    return this.scaledValue(0);
  }

  /** The value in thousandths (`1.5` → 1500n, `0.1m` → 1n), rounded away from zero; exact, as {@link Quantity.value}. */
  milliValue(): bigint {
    return this.scaledValue(-3);
  }

  /**
   * The value in units of 10^scale (`scale` -9: nano, -3: milli, 0: units, 3: kilo), rounded away from zero, as
   * apimachinery's `ScaledValue` but exact.
   * @throws QuantityError `QuantityOutOfRange` for a result of more than `MAX_QUANTITY_DIGITS` digits.
   */
  scaledValue(scale: number): bigint {
    return scaledInteger(this.#value, Math.trunc(scale), () => `${describe(this.#value)} in units of 1e${scale}`);
  }

  /** The nearest double to the value (correctly rounded; ±Infinity beyond the double range). Lossy: for display. */
  toNumber(): number {
    return Number.parseFloat(`${this.#value.m}e${this.#value.e}`);
  }

  /**
   * The quantity's text as the apiserver stores it (apimachinery's `String()`): its canonical form (`1.5` → `1500m`,
   * `1024Mi` → `1Gi`, `0.5Gi` → `512Mi`), or the parsed text itself when apimachinery keeps it.
   */
  toString(): string {
    this.#text ??= canonical(this.#value, this.format, () => describe(this.#value));
    return this.#text;
  }

  /** The JSON form: `toString()`, as apimachinery's `MarshalJSON`. */
  toJSON(): string {
    return this.toString();
  }

  /** How `console.log` and assertion messages show the quantity: `Quantity(1Gi)`. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `Quantity(${this.toString()})`;
  }
}

/** `value` as a BigInt, if it is one or a safe integer. */
function integer(value: bigint | number, call: string): bigint {
  if (typeof value === 'bigint') return value;
  if (!Number.isSafeInteger(value)) {
    throw new UsageError('InvalidArgument', `${call}: ${value} is not a safe integer; pass a BigInt, or parse a text`);
  }
  return BigInt(value);
}

function of(q: QuantityLike): Quantity {
  return q instanceof Quantity ? q : Quantity.parse(q);
}
