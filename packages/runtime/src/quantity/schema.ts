/**
 * @module quantity/schema
 * `QuantitySchema()`: the TypeBox schema of a quantity field in a custom kind, exactly what Kubernetes' own CRDs
 * (controller-gen, for a `resource.Quantity` field) publish: `anyOf: [{type: integer}, {type: string}]`,
 * `x-kubernetes-int-or-string: true` and apimachinery's quantity pattern. Its static type is `string | number`.
 *
 * Guarantees: `defineKind` turns it into that structural schema unchanged, so the apiserver refuses a text that is
 * no quantity (`storage: "lots"`) naming the field, and accepts `"1Gi"`, `500` and `"1.5e3"`. Caveats: the apiserver
 * checks the pattern, not the value: it stores the text as written (a custom resource is not canonicalised), so read
 * it with `Quantity.parse`. The pattern and the parser differ in corners apimachinery's own pattern and parser share:
 * the pattern wants a digit (the parser reads `.` as 0) and refuses a JSON fraction (`1.5` as a number; the text
 * `"1.5"` is fine), but lets through a fractional exponent (`1e1.5`) and an exponent beyond int64, which
 * `Quantity.parse` refuses with a `QuantityError`, as apimachinery's `ParseQuantity` does.
 *
 * ```ts
 * import { defineKind } from '@opkit/runtime';
 * import { QuantitySchema } from '@opkit/runtime/quantity';
 * import { Type } from '@sinclair/typebox';
 *
 * export const Databases = defineKind({
 *   group: 'example.com',
 *   version: 'v1',
 *   kind: 'Database',
 *   plural: 'databases',
 *   spec: Type.Object({ storage: QuantitySchema({ description: 'The size of each volume, e.g. 10Gi.' }) }),
 * });
 * ```
 */
import { type TInteger, type TString, type TUnion, Type } from '@sinclair/typebox';

/**
 * The pattern apimachinery publishes for a quantity in OpenAPI (and controller-gen writes into every CRD with a
 * `resource.Quantity` field).
 */
export const QUANTITY_PATTERN: string =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** The TypeBox type `QuantitySchema` returns: an integer or a string (`Static` is `number | string`). */
export type TQuantity = TUnion<[TInteger, TString]>;

/** The annotations a quantity field may carry (its validation is fixed: int-or-string with the quantity pattern). */
export interface QuantitySchemaOptions {
  /** A short title. */
  readonly title?: string;
  /** What the field means, shown by `kubectl explain`. */
  readonly description?: string;
  /** The value the apiserver fills in when the field is absent (or use `Defaulted(QuantitySchema(), '1Gi')`). */
  readonly default?: string | number;
  /** Example values (the first becomes the OpenAPI `example`). */
  readonly examples?: readonly (string | number)[];
}

/** The schema of a quantity field: int-or-string with apimachinery's quantity pattern (see the module comment). */
export function QuantitySchema(options: QuantitySchemaOptions = {}): TQuantity {
  const annotations: Record<string, unknown> = {};
  for (const key of ['title', 'description', 'default', 'examples'] as const) {
    const value = options[key];
    if (value !== undefined) annotations[key] = Array.isArray(value) ? [...value] : value;
  }
  return Type.Union([Type.Integer(), Type.String()], {
    ...annotations,
    pattern: QUANTITY_PATTERN,
    'x-kubernetes-int-or-string': true,
  });
}
