/**
 * @module policy/policy
 * ValidatingAdmissionPolicy from code. `definePolicy` describes a policy once — the kinds and operations it matches,
 * its CEL `validations`, `auditAnnotations`, `matchConditions` and `variables`, its params, its failure policy — with
 * its binding (validation actions, the param reference); `policy.manifests()` gives the two
 * `admissionregistration.k8s.io/v1` objects, which `opkit generate` writes into `config/policies/` and the Helm chart.
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
  ValidatingAdmissionPolicySpec,
} from '../client/kinds/admissionregistration.ts';
import type { MetaV1LabelSelector } from '../client/kinds/meta.ts';
import type { LabelSelector } from '../client/labels.ts';
import type { Kind } from '../client/resource.ts';
import { OpkitError } from '../errors.ts';

/** An operation a policy can match. */
export type PolicyOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/** What a policy checks: a kind's writes. */
export interface PolicyMatch {
  /** The kind (a `defineKind` kind or a built-in one, e.g. `Deployments`). */
  readonly kind: Kind;
  /** The operations (default CREATE and UPDATE). */
  readonly operations?: readonly PolicyOperation[];
}

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

/** Where a policy's parameters come from: objects of `kind`, one named or all selected. */
export interface PolicyParams {
  /** The kind of the parameter objects. */
  readonly kind: Kind;
  /** The one parameter object's name (or `selector`). */
  readonly name?: string;
  /** Selects the parameter objects (every one must pass); `{}` selects all. */
  readonly selector?: LabelSelector;
  /** Their namespace, for a namespaced kind (default: the namespace of the request). */
  readonly namespace?: string;
  /** When none is found: `Deny` (default) refuses the write, `Allow` lets it pass. */
  readonly parameterNotFoundAction?: 'Allow' | 'Deny';
}

/** A ValidatingAdmissionPolicy and its binding, as `definePolicy` takes them. */
export interface PolicyDefinition {
  /** The policy's name (a DNS subdomain); the binding is `<name>-binding`. */
  readonly name: string;
  /** The kinds and operations it checks. */
  readonly match: readonly PolicyMatch[];
  /** Only writes in namespaces with these labels. */
  readonly namespaceSelector?: LabelSelector;
  /** Only objects with these labels. */
  readonly objectSelector?: LabelSelector;
  /** CEL conditions (each named) that must all be true for the policy to apply at all. */
  readonly matchConditions?: readonly { readonly name: string; readonly expression: string }[];
  /** Named CEL expressions the others read as `variables.<name>`. */
  readonly variables?: readonly { readonly name: string; readonly expression: string }[];
  /** The checks. A policy has validations, audit annotations, or both. */
  readonly validations?: readonly PolicyValidation[];
  /** Audit-log annotations `<policy>/<key>`, each the value of a CEL expression (a string, or null for none). */
  readonly auditAnnotations?: readonly { readonly key: string; readonly valueExpression: string }[];
  /** `Fail` (default): an expression that errors refuses the write. `Ignore`: it passes. */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /** Parameters the expressions read as `params`. */
  readonly params?: PolicyParams;
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

/** What a `PolicyError` is about. */
export type PolicyErrorCode =
  /** A field of the definition has a value the apiserver would refuse: `path` names it, the message says what fits. */
  'InvalidPolicy';

/** A policy definition the apiserver would refuse: `path` names the field (`validations[0].expression`). */
export class PolicyError extends OpkitError<PolicyErrorCode> {
  override readonly name = 'PolicyError';
  /** The field at fault, e.g. `validations[0].reason`. */
  readonly path: string;

  constructor(policy: string, path: string, message: string) {
    super('InvalidPolicy', `policy ${JSON.stringify(policy)}: ${path}: ${message}`);
    this.path = path;
  }
}

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A qualified name (`prefix/name` or `name`), as Kubernetes checks matchConditions' names and audit keys. */
const QUALIFIED =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
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
  const data = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));
  return {
    ...def,
    match: Array.isArray(def.match)
      ? def.match.map((m) => ({ ...m, ...(m?.operations ? { operations: [...m.operations] } : {}) }))
      : def.match,
    ...(def.namespaceSelector !== undefined ? { namespaceSelector: data(def.namespaceSelector) } : {}),
    ...(def.objectSelector !== undefined ? { objectSelector: data(def.objectSelector) } : {}),
    ...(def.matchConditions !== undefined ? { matchConditions: data(def.matchConditions) } : {}),
    ...(def.variables !== undefined ? { variables: data(def.variables) } : {}),
    ...(def.validations !== undefined ? { validations: data(def.validations) } : {}),
    ...(def.auditAnnotations !== undefined ? { auditAnnotations: data(def.auditAnnotations) } : {}),
    ...(def.params !== undefined
      ? { params: { ...def.params, ...(def.params.selector ? { selector: data(def.params.selector) } : {}) } }
      : {}),
    ...(def.validationActions !== undefined ? { validationActions: [...def.validationActions] } : {}),
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) {
      // a kind is the caller's, not part of the definition's data
      if (typeof v === 'object' && v !== null && !('plural' in v && 'apiVersion' in v)) deepFreeze(v);
    }
  }
  return value;
}

function check(def: PolicyDefinition): void {
  const name = typeof def.name === 'string' ? def.name : String(def.name);
  const fail = (path: string, message: string): never => {
    throw new PolicyError(name, path, message);
  };
  if (typeof def.name !== 'string' || def.name.length > 253 - '-binding'.length || !DNS_SUBDOMAIN.test(def.name))
    fail('name', 'must be a lower-case DNS subdomain of at most 245 characters (its binding adds "-binding")');
  if (!Array.isArray(def.match) || def.match.length === 0) fail('match', 'must name at least one kind');
  for (const [i, m] of def.match.entries()) {
    if (typeof m?.kind?.plural !== 'string') fail(`match[${i}].kind`, 'must be a kind (defineKind or a built-in one)');
    for (const [j, op] of (m.operations ?? []).entries())
      if (!OPERATIONS.has(op)) fail(`match[${i}].operations[${j}]`, `must be one of ${[...OPERATIONS].join(', ')}`);
    if (m.operations !== undefined && m.operations.length === 0) fail(`match[${i}].operations`, 'must not be empty');
  }
  const selectors = [
    ['namespaceSelector', def.namespaceSelector],
    ['objectSelector', def.objectSelector],
    ['params.selector', def.params?.selector],
  ] as const;
  for (const [path, selector] of selectors) if (selector !== undefined) checkSelector(selector, path, fail);
  const validations = def.validations ?? [];
  const annotations = def.auditAnnotations ?? [];
  if (validations.length === 0 && annotations.length === 0)
    fail('validations', 'a policy needs at least one validation or audit annotation');
  const expression = (path: string, value: unknown) => {
    if (typeof value !== 'string' || value.trim() === '') fail(path, 'must be a non-empty CEL expression');
  };
  for (const [i, v] of validations.entries()) {
    expression(`validations[${i}].expression`, v.expression);
    if (v.messageExpression !== undefined) expression(`validations[${i}].messageExpression`, v.messageExpression);
    if (v.message !== undefined && (typeof v.message !== 'string' || /[\r\n]/.test(v.message)))
      fail(`validations[${i}].message`, 'must be one line of text');
    if (v.reason !== undefined && !REASONS.has(v.reason))
      fail(`validations[${i}].reason`, `must be one of ${[...REASONS].join(', ')}`);
  }
  const keys = new Set<string>();
  for (const [i, a] of annotations.entries()) {
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
    expression(`auditAnnotations[${i}].valueExpression`, a.valueExpression);
  }
  if ((def.matchConditions ?? []).length > 64) fail('matchConditions', 'at most 64');
  const names = new Set<string>();
  for (const [i, c] of (def.matchConditions ?? []).entries()) {
    if (typeof c.name !== 'string' || !QUALIFIED.test(c.name) || names.has(c.name))
      fail(`matchConditions[${i}].name`, 'must be a unique qualified name, e.g. exclude-leases');
    names.add(c.name);
    expression(`matchConditions[${i}].expression`, c.expression);
  }
  for (const [i, v] of (def.variables ?? []).entries()) {
    if (typeof v.name !== 'string' || !CEL_NAME.test(v.name))
      fail(`variables[${i}].name`, 'must be a CEL identifier: a letter or _, then letters, digits or _');
    expression(`variables[${i}].expression`, v.expression);
  }
  checkBinding(def, fail);
}

/** The failure policy, the validation actions and the param reference. */
function checkBinding(def: PolicyDefinition, fail: (path: string, message: string) => never): void {
  if (def.failurePolicy !== undefined && def.failurePolicy !== 'Fail' && def.failurePolicy !== 'Ignore')
    fail('failurePolicy', 'must be Fail or Ignore');
  const actions = def.validationActions ?? ['Deny'];
  if (actions.length === 0 || actions.some((a) => !ACTIONS.has(a)) || new Set(actions).size !== actions.length)
    fail('validationActions', 'must be Deny, Warn or Audit, each once');
  if (actions.includes('Deny') && actions.includes('Warn'))
    fail('validationActions', 'must not have both Deny and Warn');
  const p = def.params;
  if (p !== undefined) {
    if (typeof p.kind?.plural !== 'string') fail('params.kind', 'must be a kind');
    if ((p.name === undefined) === (p.selector === undefined)) fail('params', 'needs a name or a selector, not both');
    if (p.name !== undefined && !DNS_SUBDOMAIN.test(p.name)) fail('params.name', 'must be a DNS subdomain');
    if (p.namespace !== undefined && !p.kind.namespaced)
      fail('params.namespace', `${p.kind.kind} is cluster-scoped: leave the namespace out`);
    if (p.parameterNotFoundAction !== undefined && !['Allow', 'Deny'].includes(p.parameterNotFoundAction))
      fail('params.parameterNotFoundAction', 'must be Allow or Deny');
  }
}

/** The resource rules: one per group, version and operation set. */
function resourceRules(match: readonly PolicyMatch[]): object[] {
  const rules = new Map<
    string,
    { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] }
  >();
  for (const m of match) {
    const operations = [...(m.operations ?? ['CREATE', 'UPDATE'])].sort();
    const key = `${m.kind.group}\0${m.kind.version}\0${operations.join(',')}`;
    const rule = rules.get(key) ?? {
      apiGroups: [m.kind.group],
      apiVersions: [m.kind.version],
      operations,
      resources: [],
    };
    if (!rule.resources.includes(m.kind.plural)) rule.resources.push(m.kind.plural);
    rules.set(key, rule);
  }
  return [...rules.values()];
}

const SELECTOR_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/**
 * Refuses a label selector the apiserver would not read as written: a key other than `matchLabels` and
 * `matchExpressions` (a typo would otherwise select everything), a label value that is not a string, an expression
 * without a key or with an unknown operator.
 */
function checkSelector(selector: unknown, path: string, fail: (path: string, message: string) => never): void {
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector))
    fail(path, 'must be a label selector ({ matchLabels, matchExpressions })');
  const s = selector as Record<string, unknown>;
  for (const key of Object.keys(s))
    if (key !== 'matchLabels' && key !== 'matchExpressions')
      fail(`${path}.${key}`, 'is not a field of a label selector (matchLabels, matchExpressions)');
  const labels = s.matchLabels;
  if (labels !== undefined && (typeof labels !== 'object' || labels === null || Array.isArray(labels)))
    fail(`${path}.matchLabels`, 'must map label keys to values');
  for (const [key, value] of Object.entries((labels ?? {}) as Record<string, unknown>))
    if (typeof value !== 'string') fail(`${path}.matchLabels.${key}`, 'must be a string');
  const expressions = s.matchExpressions;
  if (expressions !== undefined && !Array.isArray(expressions)) fail(`${path}.matchExpressions`, 'must be a list');
  for (const [i, e] of ((expressions ?? []) as Record<string, unknown>[]).entries()) {
    if (typeof e?.key !== 'string' || e.key === '') fail(`${path}.matchExpressions[${i}].key`, 'must be a label key');
    if (!SELECTOR_OPERATORS.has(String(e?.operator)))
      fail(`${path}.matchExpressions[${i}].operator`, `must be one of ${[...SELECTOR_OPERATORS].join(', ')}`);
  }
}

/** A selector as the API types hold it (mutable copies of its lists). */
function selectorOf(s: LabelSelector): MetaV1LabelSelector {
  return {
    ...(s.matchLabels ? { matchLabels: { ...s.matchLabels } } : {}),
    ...(s.matchExpressions
      ? {
          matchExpressions: s.matchExpressions.map((e) => ({
            key: e.key,
            operator: e.operator,
            ...(e.values ? { values: [...e.values] } : {}),
          })),
        }
      : {}),
  };
}

function policyObject(def: PolicyDefinition): ValidatingAdmissionPolicy {
  const spec: ValidatingAdmissionPolicySpec = {
    failurePolicy: def.failurePolicy ?? 'Fail',
    matchConstraints: {
      matchPolicy: 'Equivalent',
      ...(def.namespaceSelector ? { namespaceSelector: selectorOf(def.namespaceSelector) } : {}),
      ...(def.objectSelector ? { objectSelector: selectorOf(def.objectSelector) } : {}),
      resourceRules: resourceRules(def.match),
    },
  };
  if (def.params) spec.paramKind = { apiVersion: def.params.kind.apiVersion, kind: def.params.kind.kind };
  if (def.matchConditions?.length) spec.matchConditions = def.matchConditions.map((c) => ({ ...c }));
  if (def.variables?.length) spec.variables = def.variables.map((v) => ({ ...v }));
  if (def.validations?.length) spec.validations = def.validations.map((v) => ({ ...v }));
  if (def.auditAnnotations?.length) spec.auditAnnotations = def.auditAnnotations.map((a) => ({ ...a }));
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: def.name },
    spec,
  };
}

function bindingObject(def: PolicyDefinition): ValidatingAdmissionPolicyBinding {
  const p = def.params;
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: `${def.name}-binding` },
    spec: {
      policyName: def.name,
      validationActions: [...(def.validationActions ?? ['Deny'])],
      ...(p
        ? {
            paramRef: {
              ...(p.name !== undefined ? { name: p.name } : {}),
              ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
              ...(p.selector !== undefined ? { selector: selectorOf(p.selector) } : {}),
              parameterNotFoundAction: p.parameterNotFoundAction ?? 'Deny',
            },
          }
        : {}),
    },
  };
}
