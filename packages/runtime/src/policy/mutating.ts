/**
 * @module policy/mutating
 * MutatingAdmissionPolicy from code. `defineMutatingPolicy` describes a policy once — the kinds it matches (on CREATE
 * and UPDATE), its CEL `mutations` (apply configurations or JSON patches), `matchConditions` and `variables`, its
 * params, its failure and reinvocation policies — with its binding (the param reference); `policy.manifests()` gives
 * the two `admissionregistration.k8s.io/v1` objects, which `opkit generate` writes into `config/policies/` and the
 * Helm chart, as it does `definePolicy`'s.
 *
 * Guarantees: a definition is checked when `defineMutatingPolicy` runs (names, operations CREATE and UPDATE only, at
 * least one mutation, each with exactly one non-empty expression, the reinvocation policy, the param reference); a
 * failure is a `PolicyError` whose `path` names the field. Expressions are compiled, with types against the matched
 * custom kinds' schemas, by `opkit generate`, as the apiserver compiles them. The manifests are byte-stable: keys in a
 * fixed order, the binding named `<name>-binding`, `matchPolicy: Equivalent` (a write of another version of a matched
 * kind is converted and mutated too).
 */
import type {
  MutatingAdmissionPolicy,
  MutatingAdmissionPolicyBinding,
  Mutation,
} from '../client/kinds/admissionregistration.ts';
import {
  checkConditionsAndVariables,
  checkExpression,
  checkFailurePolicy,
  checkParams,
  checkTarget,
  copyShared,
  data,
  deepFreeze,
  type Fail,
  failure,
  type PolicyBase,
  type PolicyMatch,
  paramRef,
  sharedSpec,
} from './common.ts';

/**
 * One CEL mutation: exactly one of `applyConfiguration` and `jsonPatch` (a mutation with both, or neither, does not
 * compile; from JavaScript, `defineMutatingPolicy` refuses it).
 */
export type PolicyMutation =
  | {
      /**
       * A CEL expression giving the fields to set, merged into the object as server-side apply merges them (the
       * apiserver's structured merge, by the kind's schema), e.g. `Object{spec: Object.spec{replicas: 3}}`. A list
       * the schema makes atomic (a CRD's list without `x-kubernetes-list-type: map` or `set`) cannot be set this way.
       */
      readonly applyConfiguration: string;
      readonly jsonPatch?: never;
    }
  | {
      /**
       * A CEL expression giving a list of RFC 6902 JSON Patch operations applied to the object in order, e.g.
       * `[JSONPatch{op: "add", path: "/metadata/labels/team", value: "a"}]`.
       */
      readonly jsonPatch: string;
      readonly applyConfiguration?: never;
    };

/** What a mutating policy changes: a kind's creates and updates. */
export interface MutatingPolicyMatch extends PolicyMatch {
  /** The operations (default CREATE and UPDATE). */
  readonly operations?: readonly ('CREATE' | 'UPDATE')[];
}

/** A MutatingAdmissionPolicy and its binding, as `defineMutatingPolicy` takes them. */
export interface MutatingPolicyDefinition extends PolicyBase {
  /**
   * The kinds and operations it mutates: CREATE and UPDATE (the default). A DELETE has no object to mutate, and a
   * CONNECT reaches only subresources, which `match` does not name.
   */
  readonly match: readonly MutatingPolicyMatch[];
  /** The mutations, applied in order; at least one. */
  readonly mutations: readonly PolicyMutation[];
  /**
   * `Fail` (default): a mutation whose expression errs, or whose patch cannot apply, refuses the write. `Ignore`: that
   * mutation is skipped, and the policy's other mutations still apply.
   */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /**
   * `Never` (default): the policy runs once per write. `IfNeeded`: it runs again when a later admission plugin (a
   * webhook or another policy) changed the object after it ran.
   */
  readonly reinvocationPolicy?: 'Never' | 'IfNeeded';
}

/** A defined mutating policy: its definition and its manifests. */
export interface MutatingPolicy {
  /** The definition, checked. */
  readonly definition: MutatingPolicyDefinition;
  /** The MutatingAdmissionPolicy and its MutatingAdmissionPolicyBinding. */
  manifests(): [policy: MutatingAdmissionPolicy, binding: MutatingAdmissionPolicyBinding];
}

/** The operations a MutatingAdmissionPolicy can match. */
const OPERATIONS: ReadonlySet<string> = new Set(['CREATE', 'UPDATE']);

/** Checks `def` and returns the mutating policy. */
export function defineMutatingPolicy(def: MutatingPolicyDefinition): MutatingPolicy {
  // a deep copy, checked and frozen: what manifests() writes is what was checked, whatever the caller changes later
  const definition = deepFreeze(copy(def));
  check(definition);
  return { definition, manifests: () => [policyObject(definition), bindingObject(definition)] };
}

/** A copy of the definition's plain data; the kinds (objects with methods) are kept as they are. */
function copy(def: MutatingPolicyDefinition): MutatingPolicyDefinition {
  return { ...copyShared(def), ...(def.mutations !== undefined ? { mutations: data(def.mutations) } : {}) };
}

function check(def: MutatingPolicyDefinition): void {
  const fail = failure(def.name);
  checkTarget(
    def,
    OPERATIONS,
    'must be CREATE or UPDATE: a DELETE has no object to mutate, and a CONNECT reaches only subresources, which match does not name',
    fail,
  );
  checkMutations(def, fail);
  checkConditionsAndVariables(def, fail);
  checkFailurePolicy(def, fail);
  if (
    def.reinvocationPolicy !== undefined &&
    def.reinvocationPolicy !== 'Never' &&
    def.reinvocationPolicy !== 'IfNeeded'
  )
    fail('reinvocationPolicy', 'must be Never or IfNeeded');
  checkParams(def.params, fail);
}

/** At least one mutation, each with exactly one of its two expressions, non-empty. */
function checkMutations(def: MutatingPolicyDefinition, fail: Fail): void {
  if (!Array.isArray(def.mutations) || def.mutations.length === 0)
    fail('mutations', 'a mutating policy needs at least one mutation');
  for (const [i, m] of def.mutations.entries()) {
    if (typeof m !== 'object' || m === null || (m.applyConfiguration === undefined) === (m.jsonPatch === undefined))
      fail(`mutations[${i}]`, 'must have exactly one of applyConfiguration and jsonPatch');
    if (m.applyConfiguration !== undefined)
      checkExpression(`mutations[${i}].applyConfiguration`, m.applyConfiguration, fail);
    else checkExpression(`mutations[${i}].jsonPatch`, m.jsonPatch, fail);
  }
}

/** A mutation as the API holds it (checked: exactly one of the two expressions is there). */
function mutationOf(m: PolicyMutation): Mutation {
  return m.applyConfiguration !== undefined
    ? { patchType: 'ApplyConfiguration', applyConfiguration: { expression: m.applyConfiguration } }
    : { patchType: 'JSONPatch', jsonPatch: { expression: m.jsonPatch } };
}

function policyObject(def: MutatingPolicyDefinition): MutatingAdmissionPolicy {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: def.name },
    spec: {
      ...sharedSpec(def),
      mutations: def.mutations.map(mutationOf),
      reinvocationPolicy: def.reinvocationPolicy ?? 'Never',
    },
  };
}

function bindingObject(def: MutatingPolicyDefinition): MutatingAdmissionPolicyBinding {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: `${def.name}-binding` },
    spec: { policyName: def.name, ...(def.params ? { paramRef: paramRef(def.params) } : {}) },
  };
}
