/**
 * @module quantity/errors
 * `QuantityError`: why a text is not a Kubernetes quantity (the three errors apimachinery's `ParseQuantity` returns,
 * each with its own code), or why an exact result would be too large to compute. The message names the text and
 * what a valid quantity looks like; `text` holds the offending text.
 */
import { OpkitError } from '../errors.ts';

/** Why a quantity could not be parsed or computed. */
export type QuantityErrorCode =
  /**
   * The text does not have the shape of a quantity (apimachinery's `ErrFormatWrong`): empty, whitespace, or
   * characters after the number that are no suffix. Write a number with an optional suffix: `1Gi`, `500m`, `1.5e3`.
   */
  | 'InvalidQuantity'
  /**
   * The number of a quantity has no digit (apimachinery's `ErrNumeric`, e.g. `.Pi`): write at least one digit.
   */
  | 'InvalidQuantityNumber'
  /**
   * The suffix is none of Kubernetes' (apimachinery's `ErrSuffix`, e.g. `1i`, `5mi`, `1e`): use Ki, Mi, Gi, Ti, Pi,
   * Ei, n, u, m, k, M, G, T, P, E or an exponent (`e3`, `E-3`).
   */
  | 'InvalidQuantitySuffix'
  /**
   * The exact result of an operation (aligning `1e900000` with `1`, or `value()` of `1e900000`) would need more
   * decimal digits than a quantity computes (`MAX_QUANTITY_DIGITS`); compare such quantities with `cmp`, which never
   * expands them.
   */
  | 'QuantityOutOfRange';

/** A text that is not a Kubernetes quantity, or an exact result too large to compute. */
export class QuantityError extends OpkitError<QuantityErrorCode> {
  override readonly name = 'QuantityError';
  /** The text at fault (for `QuantityOutOfRange`, the quantity's canonical form, or its operands). */
  readonly text: string;

  constructor(code: QuantityErrorCode, text: string, message: string) {
    super(code, message);
    this.text = text;
  }
}

/** What a valid quantity looks like, for error messages. */
export const QUANTITY_SHAPE =
  'a quantity is a number (digits, an optional sign and decimal point) with an optional suffix: binary SI ' +
  '(Ki, Mi, Gi, Ti, Pi, Ei), decimal SI (n, u, m, k, M, G, T, P, E) or an exponent (e3, E-3), e.g. 1Gi, 500m, 1.5e3';
