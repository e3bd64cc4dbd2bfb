/**
 * @module @opkit/runtime/policy
 * Admission policies from code: `definePolicy` describes a ValidatingAdmissionPolicy and `defineMutatingPolicy` a
 * MutatingAdmissionPolicy, each with its binding, once; `opkit generate` writes them into `config/policies/` and the
 * Helm chart, after compiling every expression as the apiserver will.
 */
export {
  type PolicyBase,
  PolicyError,
  type PolicyErrorCode,
  type PolicyMatch,
  type PolicyOperation,
  type PolicyParams,
} from './common.ts';
export {
  defineMutatingPolicy,
  type MutatingPolicy,
  type MutatingPolicyDefinition,
  type MutatingPolicyMatch,
  type PolicyMutation,
} from './mutating.ts';
export { definePolicy, type Policy, type PolicyDefinition, type PolicyValidation } from './policy.ts';
