/**
 * @module crd/rules
 * CEL validation rules (`x-kubernetes-validations`) on any node of a kind's schema, typed: `Validated(schema, rules)`
 * for a field, an array, a map or an object, in any version. The rules see the node as `self` (and, in a transition
 * rule, its previous value as `oldSelf`).
 *
 * Guarantees: `schema` is cloned, never changed; the rules are appended after any the node already has, in order. Each
 * rule is checked when the CRD is made (`defineKind`: its fields and reason) and, with types and cost, by
 * `opkit generate`, which compiles it against this node as the apiserver will; `@opkit/testenv/cel` evaluates it
 * offline with the apiserver's own code.
 */
import { CloneType, type TSchema } from '@sinclair/typebox';
import type { ValidationRule } from './kind.ts';

/** `schema` with `rules` added to its `x-kubernetes-validations`. */
export function Validated<S extends TSchema>(schema: S, rules: readonly ValidationRule[]): S {
  const existing: unknown = (schema as Record<string, unknown>)['x-kubernetes-validations'];
  const before = Array.isArray(existing) ? (existing as ValidationRule[]) : [];
  return CloneType(schema, { 'x-kubernetes-validations': [...before, ...rules.map((r) => ({ ...r }))] });
}
