/**
 * @module policy/common
 * What ValidatingAdmissionPolicy (`policy/policy`) and MutatingAdmissionPolicy (`policy/mutating`) share: the
 * matched kinds and operations, selectors, match conditions, variables and params of a definition, their checks, their
 * parts of the manifests, the copy and freeze of a definition, and `PolicyError`.
 *
 * Guarantees: each check throws a `PolicyError` whose `path` names the field, with the same message for either kind
 * of policy; the manifests' parts have their keys in a fixed order.
 */
import type {
  MutatingAdmissionPolicySpec,
  NamedRuleWithOperations,
  ParamRef,
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

/** What a Validating- and a MutatingAdmissionPolicy definition both have, besides the kinds they match. */
export interface PolicyBase {
  /** The policy's name (a DNS subdomain); the binding is `<name>-binding`. */
  readonly name: string;
  /** Only writes in namespaces with these labels. */
  readonly namespaceSelector?: LabelSelector;
  /** Only objects with these labels. */
  readonly objectSelector?: LabelSelector;
  /** CEL conditions (each named) that must all be true for the policy to apply at all. */
  readonly matchConditions?: readonly { readonly name: string; readonly expression: string }[];
  /** Named CEL expressions the others read as `variables.<name>`. */
  readonly variables?: readonly { readonly name: string; readonly expression: string }[];
  /** `Fail` or `Ignore`: what an expression that errors does. */
  readonly failurePolicy?: 'Fail' | 'Ignore';
  /** Parameters the expressions read as `params`. */
  readonly params?: PolicyParams;
}

/** A definition as the shared checks and manifest parts read it. */
export interface SharedDefinition extends PolicyBase {
  /** The kinds and operations it matches. */
  readonly match: readonly PolicyMatch[];
}

/** Throws the `PolicyError` of a field: its path and what fits. */
export type Fail = (path: string, message: string) => never;

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const CEL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** A qualified name (`prefix/name` or `name`), as Kubernetes checks matchConditions' names and audit keys. */
export const QUALIFIED =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const SELECTOR_OPERATORS: ReadonlySet<string> = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

/** `fail` for the policy named `name` (whatever the caller passed as the name). */
export function failure(name: unknown): Fail {
  const policy = typeof name === 'string' ? name : String(name);
  return (path, message) => {
    throw new PolicyError(policy, path, message);
  };
}

/** A copy of plain data (JSON's), `undefined` kept. */
export const data = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

/** A copy of the shared fields' plain data, the rest as it is; the kinds (objects with methods) are kept as they are. */
export function copyShared<D extends SharedDefinition>(def: D): D {
  return {
    ...def,
    match: Array.isArray(def.match)
      ? def.match.map((m) => ({ ...m, ...(m?.operations ? { operations: [...m.operations] } : {}) }))
      : def.match,
    ...(def.namespaceSelector !== undefined ? { namespaceSelector: data(def.namespaceSelector) } : {}),
    ...(def.objectSelector !== undefined ? { objectSelector: data(def.objectSelector) } : {}),
    ...(def.matchConditions !== undefined ? { matchConditions: data(def.matchConditions) } : {}),
    ...(def.variables !== undefined ? { variables: data(def.variables) } : {}),
    ...(def.params !== undefined
      ? { params: { ...def.params, ...(def.params.selector ? { selector: data(def.params.selector) } : {}) } }
      : {}),
  };
}

/** Freezes `value` and everything in it but the kinds (which are the caller's, not the definition's data). */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) {
      if (typeof v === 'object' && v !== null && !('plural' in v && 'apiVersion' in v)) deepFreeze(v);
    }
  }
  return value;
}

/** Refuses a value that is not a non-empty CEL expression. */
export function checkExpression(path: string, value: unknown, fail: Fail): void {
  if (typeof value !== 'string' || value.trim() === '') fail(path, 'must be a non-empty CEL expression');
}

/**
 * The name, the matched kinds and their operations (each in `operations`, else `refused` is the message), and the
 * selectors (`namespaceSelector`, `objectSelector`, `params.selector`).
 */
export function checkTarget(def: SharedDefinition, operations: ReadonlySet<string>, refused: string, fail: Fail): void {
  if (typeof def.name !== 'string' || def.name.length > 253 - '-binding'.length || !DNS_SUBDOMAIN.test(def.name))
    fail('name', 'must be a lower-case DNS subdomain of at most 245 characters (its binding adds "-binding")');
  if (!Array.isArray(def.match) || def.match.length === 0) fail('match', 'must name at least one kind');
  for (const [i, m] of def.match.entries()) {
    if (typeof m?.kind?.plural !== 'string') fail(`match[${i}].kind`, 'must be a kind (defineKind or a built-in one)');
    for (const [j, op] of (m.operations ?? []).entries())
      if (!operations.has(op)) fail(`match[${i}].operations[${j}]`, refused);
    if (m.operations !== undefined && m.operations.length === 0) fail(`match[${i}].operations`, 'must not be empty');
  }
  const selectors = [
    ['namespaceSelector', def.namespaceSelector],
    ['objectSelector', def.objectSelector],
    ['params.selector', def.params?.selector],
  ] as const;
  for (const [path, selector] of selectors) if (selector !== undefined) checkSelector(selector, path, fail);
}

/** The match conditions (at most 64, unique qualified names) and the variables (CEL identifiers). */
export function checkConditionsAndVariables(def: SharedDefinition, fail: Fail): void {
  if ((def.matchConditions ?? []).length > 64) fail('matchConditions', 'at most 64');
  const names = new Set<string>();
  for (const [i, c] of (def.matchConditions ?? []).entries()) {
    if (typeof c.name !== 'string' || !QUALIFIED.test(c.name) || names.has(c.name))
      fail(`matchConditions[${i}].name`, 'must be a unique qualified name, e.g. exclude-leases');
    names.add(c.name);
    checkExpression(`matchConditions[${i}].expression`, c.expression, fail);
  }
  for (const [i, v] of (def.variables ?? []).entries()) {
    if (typeof v.name !== 'string' || !CEL_NAME.test(v.name))
      fail(`variables[${i}].name`, 'must be a CEL identifier: a letter or _, then letters, digits or _');
    checkExpression(`variables[${i}].expression`, v.expression, fail);
  }
}

/** The failure policy: `Fail` or `Ignore`. */
export function checkFailurePolicy(def: SharedDefinition, fail: Fail): void {
  if (def.failurePolicy !== undefined && def.failurePolicy !== 'Fail' && def.failurePolicy !== 'Ignore')
    fail('failurePolicy', 'must be Fail or Ignore');
}

/** The param reference: a kind, a name or a selector (not both), a namespace only for a namespaced kind. */
export function checkParams(p: PolicyParams | undefined, fail: Fail): void {
  if (p === undefined) return;
  if (typeof p.kind?.plural !== 'string') fail('params.kind', 'must be a kind');
  if ((p.name === undefined) === (p.selector === undefined)) fail('params', 'needs a name or a selector, not both');
  if (p.name !== undefined && !DNS_SUBDOMAIN.test(p.name)) fail('params.name', 'must be a DNS subdomain');
  if (p.namespace !== undefined && !p.kind.namespaced)
    fail('params.namespace', `${p.kind.kind} is cluster-scoped: leave the namespace out`);
  if (p.parameterNotFoundAction !== undefined && !['Allow', 'Deny'].includes(p.parameterNotFoundAction))
    fail('params.parameterNotFoundAction', 'must be Allow or Deny');
}

/**
 * Refuses a label selector the apiserver would not read as written: a key other than `matchLabels` and
 * `matchExpressions` (a typo would otherwise select everything), a label value that is not a string, an expression
 * without a key or with an unknown operator.
 */
function checkSelector(selector: unknown, path: string, fail: Fail): void {
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

/** The spec's fields both policies have. */
export type SharedSpec = Pick<
  MutatingAdmissionPolicySpec & ValidatingAdmissionPolicySpec,
  'failurePolicy' | 'matchConstraints' | 'paramKind' | 'matchConditions' | 'variables'
>;

/**
 * The spec's fields both policies have, in this order: `failurePolicy` (default `Fail`), `matchConstraints`
 * (`matchPolicy: Equivalent`, the selectors, the resource rules), `paramKind`, `matchConditions`, `variables`.
 */
export function sharedSpec(def: SharedDefinition): SharedSpec {
  return {
    failurePolicy: def.failurePolicy ?? 'Fail',
    matchConstraints: {
      matchPolicy: 'Equivalent',
      ...(def.namespaceSelector ? { namespaceSelector: selectorOf(def.namespaceSelector) } : {}),
      ...(def.objectSelector ? { objectSelector: selectorOf(def.objectSelector) } : {}),
      resourceRules: resourceRules(def.match),
    },
    ...(def.params ? { paramKind: { apiVersion: def.params.kind.apiVersion, kind: def.params.kind.kind } } : {}),
    ...(def.matchConditions?.length ? { matchConditions: def.matchConditions.map((c) => ({ ...c })) } : {}),
    ...(def.variables?.length ? { variables: def.variables.map((v) => ({ ...v })) } : {}),
  };
}

/** The binding's `paramRef`: name, namespace, selector, `parameterNotFoundAction` (default `Deny`). */
export function paramRef(p: PolicyParams): ParamRef {
  return {
    ...(p.name !== undefined ? { name: p.name } : {}),
    ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
    ...(p.selector !== undefined ? { selector: selectorOf(p.selector) } : {}),
    parameterNotFoundAction: p.parameterNotFoundAction ?? 'Deny',
  };
}

/** The resource rules: one per group, version and operation set. */
function resourceRules(match: readonly PolicyMatch[]): NamedRuleWithOperations[] {
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
