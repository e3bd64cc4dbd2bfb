/**
 * @module @opkit/runtime/policy
 * ValidatingAdmissionPolicy from code: `definePolicy` describes a policy and its binding once, `opkit generate` writes
 * them into `config/policies/` and the Helm chart, after compiling every expression as the apiserver will.
 */
export {
  definePolicy,
  type Policy,
  type PolicyDefinition,
  PolicyError,
  type PolicyErrorCode,
  type PolicyMatch,
  type PolicyOperation,
  type PolicyParams,
  type PolicyValidation,
} from './policy.ts';
