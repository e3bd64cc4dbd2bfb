/**
 * @module @opkit/runtime/quantity
 * Kubernetes resource quantities (`1Gi`, `500m`, `1.5e3`) with the semantics of apimachinery's `resource.Quantity`:
 * `Quantity` parses, compares, adds, subtracts and formats them exactly (BigInt, no float), and `QuantitySchema()`
 * declares a quantity field of a custom kind as Kubernetes' own CRDs do, so the apiserver refuses `"lots"`.
 * Guarantees and caveats: see each module (quantity, parse, format, schema).
 *
 * ```ts
 * import { Quantity } from '@opkit/runtime/quantity';
 *
 * const size = Quantity.parse('0.5Gi');
 * size.toString(); // '512Mi'
 * size.add('512Mi').equals('1Gi'); // true
 * ```
 */
export { MAX_QUANTITY_DIGITS } from './decimal.ts';
export { QuantityError, type QuantityErrorCode } from './errors.ts';
export type { QuantityFormat } from './parse.ts';
export { Quantity, type QuantityLike } from './quantity.ts';
export { QUANTITY_PATTERN, QuantitySchema, type QuantitySchemaOptions, type TQuantity } from './schema.ts';
