/**
 * @module @opkit/runtime/crd
 * Custom resource definitions from TypeBox schemas, beyond `defineKind`, `Defaulted` and `CrdSchemaError` (in
 * `@opkit/runtime`): CEL rules on any schema node (`Validated`, `ValidationRule`), bounds on the lists of an embedded
 * built-in type (`withLimits`), the status conditions' schema (`ConditionsSchema`, metav1.Condition), the definition's
 * types, the input types, kinds with several versions and their conversions, and the structural-schema check behind
 * the generated CRD.
 */
export { ConditionSchema, ConditionsSchema } from './conditions.ts';
export type { InputStatic, KindInput, TDefaulted } from './input.ts';
export type {
  CustomKind,
  KindDefinition,
  KindObject,
  PrinterColumn,
  ValidationRule,
} from './kind.ts';
export { type Limits, withLimits } from './limits.ts';
export { Validated } from './rules.ts';
export { structuralSchema } from './schema.ts';
export {
  type Conversion,
  ConversionError,
  type ConversionErrorCode,
  type CrdOptions,
  type VersionDefinition,
  type VersionedKind,
  type VersionedKindDefinition,
  type VersionInput,
  type VersionMap,
  type VersionObject,
  type WebhookClientConfig,
} from './versions.ts';
