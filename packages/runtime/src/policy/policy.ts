/**
 * @module policy/policy
 * ValidatingAdmissionPolicy from code. `definePolicy` describes a policy once — the kinds and operations it matches,
 * its CEL `validations`, `auditAnnotations`, `matchConditions` and `variables`, its params, its failure policy — with
 * its binding (validation actions, the param reference); `policy.manifests()` gives the two
 * `admissionregistration.k8s.io/v1` objects, which `opkit generate` writes into `config/policies/` and the Helm chart.
 * Its sibling for MutatingAdmissionPolicy is `defineMutatingPolicy` (`policy/mutating`); what both share (the match,
 * selectors, conditions, variables, params and their checks, `PolicyError`) is in `policy/common`.
 *
 * Guarantees: a definition is checked when `definePolicy` runs (names, a validation or audit annotation present, each
 * expression non-empty, reasons, actions, the param reference); a failure is a `PolicyError` whose `path` names the
 * field. Expressions are compiled, with types against the matched custom kinds' schemas, by `opkit generate`, as the
 * apiserver compiles them. The manifests are byte-stable: keys in a fixed order, the binding named `<name>-binding`,
 * `matchPolicy: Equivalent` (a write of another version of a matched kind is converted and checked too).
 */
import type {
  ValidatingAdmissionPolicy,
  ValidatingAdmissionPolicyBinding,
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
  QUALIFIED,
  sharedSpec,
} from './common.ts';

/** One CEL check: the write is refused (or warned about, or audited) when `expression` is false. */
export interface PolicyValidation {
  /** Over `object`, `oldObject`, `request`, `params`, `namespaceObject`, `variables`, `authorizer`. */
  readonly expression: string;
  /** The message when it fails (default: the expression). */
  readonly message?: string;
  /** A CEL expression computing the message (a string). */
  readonly messageExpression?: string;
  /** The refusal's reason (and HTTP code): `Invalid` (default, 422), `Forbidden` (403), `Unauthorized`, `RequestEntityTooLarge`. */
  readonly reason?: 'Unauthorized' | 'Forbidden' | 'Invalid' | 'RequestEntityTooLarge';
}

/** A ValidatingAdmissionPolicy and its binding, as `definePolicy` takes them. */
export interface PolicyDefinition extends PolicyBase {
  /** The kinds and operations it checks. */
  readonly match: readonly PolicyMatch[];
  /** The checks. A policy has validations, audit annotations, or both. */
  readonly validations?: readonly PolicyValidation[];
  /** Audit-log annotations `<policy>/<key>`, each the value of a CEL expression (a string, or null for none). */
  readonly auditAnnotations?: readonly { readonly key: string; readonly valueExpression: string }[];
  /** `Fail` (default): an expression that errors refuses the write. `Ignore`: it passes. */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /** What a failed validation does: `Deny` (default), `Warn` (a warning to the client), `Audit` (an audit annotation). */
  readonly validationActions?: readonly ('Deny' | 'Warn' | 'Audit')[];
}

/** A defined policy: its definition and its manifests. */
export interface Policy {
  /** The definition, checked. */
  readonly definition: PolicyDefinition;
  /** The ValidatingAdmissionPolicy and its ValidatingAdmissionPolicyBinding. */
  manifests(): [policy: ValidatingAdmissionPolicy, binding: ValidatingAdmissionPolicyBinding];
}

const OPERATIONS: ReadonlySet<string> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);
const REASONS: ReadonlySet<string> = new Set(['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge']);
const ACTIONS: ReadonlySet<string> = new Set(['Deny', 'Warn', 'Audit']);

/** Checks `def` and returns the policy. */
export function definePolicy(def: PolicyDefinition): Policy {
  // a deep copy, checked and frozen: what manifests() writes is what was checked, whatever the caller changes later
  const definition = deepFreeze(copy(def));
  check(definition);
  return { definition, manifests: () => [policyObject(definition), bindingObject(definition)] };
}

/** A copy of the definition's plain data; the kinds (objects with methods) are kept as they are. */
function copy(def: PolicyDefinition): PolicyDefinition {
  return {
    ...copyShared(def),
    ...(def.validations !== undefined ? { validations: data(def.validations) } : {}),
    ...(def.auditAnnotations !== undefined ? { auditAnnotations: data(def.auditAnnotations) } : {}),
    ...(def.validationActions !== undefined ? { validationActions: [...def.validationActions] } : {}),
  };
}

function check(def: PolicyDefinition): void {
  const fail = failure(def.name);
  checkTarget(def, OPERATIONS, `must be one of ${[...OPERATIONS].join(', ')}`, fail);
  const validations = def.validations ?? [];
  const annotations = def.auditAnnotations ?? [];
  if (validations.length === 0 && annotations.length === 0)
    fail('validations', 'a policy needs at least one validation or audit annotation');
  for (const [i, v] of validations.entries()) {
    checkExpression(`validations[${i}].expression`, v.expression, fail);
    if (v.messageExpression !== undefined)
      checkExpression(`validations[${i}].messageExpression`, v.messageExpression, fail);
    if (v.message !== undefined && (typeof v.message !== 'string' || /[\r\n]/.test(v.message)))
      fail(`validations[${i}].message`, 'must be one line of text');
    if (v.reason !== undefined && !REASONS.has(v.reason))
      fail(`validations[${i}].reason`, `must be one of ${[...REASONS].join(', ')}`);
  }
  checkAuditAnnotations(def, fail);
  checkConditionsAndVariables(def, fail);
  checkBinding(def, fail);
}

/** Each audit annotation's key (unique, a name the policy's name prefixes) and value expression. */
function checkAuditAnnotations(def: PolicyDefinition, fail: Fail): void {
  const keys = new Set<string>();
  for (const [i, a] of (def.auditAnnotations ?? []).entries()) {
    if (
      typeof a.key !== 'string' ||
      a.key.length > 63 ||
      !QUALIFIED.test(`${def.name}/${a.key}`) ||
      a.key.includes('/')
    )
      fail(
        `auditAnnotations[${i}].key`,
        'must be a name of at most 63 letters, digits, -, _ and . (it is prefixed with the policy name)',
      );
    if (keys.has(a.key)) fail(`auditAnnotations[${i}].key`, `${JSON.stringify(a.key)} is used twice`);
    keys.add(a.key);
    checkExpression(`auditAnnotations[${i}].valueExpression`, a.valueExpression, fail);
  }
}

/** The failure policy, the validation actions and the param reference. */
function checkBinding(def: PolicyDefinition, fail: Fail): void {
  checkFailurePolicy(def, fail);
  const actions = def.validationActions ?? ['Deny'];
  if (actions.length === 0 || actions.some((a) => !ACTIONS.has(a)) || new Set(actions).size !== actions.length)
    fail('validationActions', 'must be Deny, Warn or Audit, each once');
  if (actions.includes('Deny') && actions.includes('Warn'))
    fail('validationActions', 'must not have both Deny and Warn');
  checkParams(def.params, fail);
}

function policyObject(def: PolicyDefinition): ValidatingAdmissionPolicy {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: def.name },
    spec: {
      ...sharedSpec(def),
      ...(def.validations?.length ? { validations: def.validations.map((v) => ({ ...v })) } : {}),
      ...(def.auditAnnotations?.length ? { auditAnnotations: def.auditAnnotations.map((a) => ({ ...a })) } : {}),
    },
  };
}

function bindingObject(def: PolicyDefinition): ValidatingAdmissionPolicyBinding {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `${def.name}-binding` },
    spec: {
      policyName: def.name,
      validationActions: [...(def.validationActions ?? ['Deny'])],
      ...(def.params ? { paramRef: paramRef(def.params) } : {}),
    },
  };
}
