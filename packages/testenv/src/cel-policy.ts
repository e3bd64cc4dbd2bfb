/**
 * @module cel-policy
 * Admission policies in the offline validator (`@opkit/testenv/cel`): `checkPolicy` compiles a Validating- or
 * MutatingAdmissionPolicy's expressions and type-checks them against the matched kinds, `evaluatePolicy` decides a write
 * through a ValidatingAdmissionPolicy and its binding with the apiserver's own admission dispatcher, and
 * `evaluateMutatingPolicy` mutates a write through a MutatingAdmissionPolicy with the apiserver's own mutating
 * dispatcher and patchers.
 *
 * Guarantees: the answers are the apiserver's code's (see `cel.ts`); a policy, binding or request that is not what the
 * apiserver would accept as such fails with `TestenvError` `InvalidOption` naming what is wrong.
 */
import { TestenvError } from './errors.ts';

/** The result of a Go function, or its failure as a `TestenvError` (cel.ts). */
type Call = <T>(json: string) => T;

type Json = Record<string, unknown>;

/** One field error of a refusal, as the apiserver sends it in `details.causes`. */
interface Cause {
  readonly reason?: string;
  readonly message: string;
  readonly field?: string;
}

/** One expression of a policy that does not compile, or does not type-check against a matched kind. */
export interface PolicyProblem {
  /** The expression's field, e.g. `spec.validations[0].expression`. */
  readonly field: string;
  /** The expression's text. */
  readonly expression?: string;
  /** The compiler's message, e.g. `compilation failed: ERROR: <input>:1:8: undefined field 'replicass'`. */
  readonly detail: string;
  /**
   * False: the apiserver refuses the policy. True: it compiles, but not against the schema of a kind it matches (a
   * typo in a field name): the apiserver accepts it (for a ValidatingAdmissionPolicy it records a warning in its
   * `status.typeChecking`), and the expression fails at run time, or a mutation sets a field the schema prunes.
   */
  readonly typeCheck: boolean;
}

/** What `checkPolicy` finds: `ok` when every expression compiles and type-checks. */
export interface PolicyCheck {
  /** True when there is no problem, type-checking included. */
  readonly ok: boolean;
  /** Each problem, in the policy's order (compile errors first, then type-check warnings). */
  readonly problems: readonly PolicyProblem[];
}

/**
 * A Validating- or MutatingAdmissionPolicy as JSON, or anything with a `manifests()` method returning it first
 * (`definePolicy`, `defineMutatingPolicy`).
 */
export type PolicySource = object | { manifests(): readonly object[] };

/** A kind a request writes: the runtime's kinds (`defineKind`, `@opkit/runtime/kinds`) have these fields. */
export interface KindRef {
  /** The API group, '' for the core group. */
  readonly group: string;
  /** The version written, e.g. `v1`. */
  readonly version: string;
  /** The kind, e.g. `Deployment`. */
  readonly kind: string;
  /** The resource: the lower-case plural. */
  readonly plural: string;
  /** Whether its objects live in a namespace. */
  readonly namespaced: boolean;
}

/** One write, as a policy sees it. */
export interface PolicyRequest {
  /** What the request does (`request.operation`). */
  readonly operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  /** The kind written (its group, version and plural are what the policy's rules match). */
  readonly kind: KindRef;
  /**
   * The new object (absent on DELETE). For a custom kind, the apiserver's policies see it as it would be stored
   * (unknown fields pruned, defaults set): pass `validator.create(kind, object).object` to check what they check.
   * Without `apiVersion` and `kind` it is taken to be of `kind`; with others, the request is refused.
   */
  readonly object?: object;
  /** The stored object (UPDATE, DELETE). */
  readonly oldObject?: object;
  /** The Namespace the write is in, with its labels (default: the object's namespace, else `default`; no labels). */
  readonly namespace?: object;
  /**
   * The objects of the policy's param kind that exist. Absent: none exist (for a policy made by `definePolicy` or
   * `defineMutatingPolicy`, whose param kind is known; a policy given as JSON with a `paramKind` needs `params`, with
   * `objects: []` for none, to know the kind's scope).
   */
  readonly params?: { readonly kind: KindRef; readonly objects: readonly object[] };
  /** Who writes (`request.userInfo`); the `authorizer` variable allows every check. */
  readonly user?: { readonly username: string; readonly groups?: readonly string[] };
  /** A server-side dry run (`request.dryRun`). */
  readonly dryRun?: boolean;
}

/** What a policy does with a write. */
export interface PolicyAdmission {
  /** False when a validation with the `Deny` action failed (or, under `failurePolicy: Fail`, errored). */
  readonly allowed: boolean;
  /** The refusal the apiserver sends: its message (`ValidatingAdmissionPolicy '…' with binding '…' denied request: …`), reason and code. */
  readonly status?: {
    readonly message: string;
    readonly reason: string;
    readonly code: number;
    readonly details?: { readonly causes?: readonly Cause[] };
  };
  /** The warnings sent to the client (the `Warn` action). */
  readonly warnings: readonly string[];
  /** The audit annotations, `<policy>/<key>` → value (and failures of the `Audit` action). */
  readonly auditAnnotations: Readonly<Record<string, string>>;
}

/** A write through a MutatingAdmissionPolicy: a `PolicyRequest`, and the CRD of a custom kind written. */
export interface MutationRequest extends PolicyRequest {
  /**
   * The CustomResourceDefinition of the kind written, when it is not built in: its schema types the apply
   * configurations (as the apiserver reads it from the CRD's OpenAPI) and gives the defaults applied after each
   * mutation.
   */
  readonly crd?: object;
}

/** What a MutatingAdmissionPolicy does with a write. */
export interface MutationAdmission {
  /** False when the policy refused the write: an expression that errs under `failurePolicy: Fail`, a patch that cannot apply. */
  readonly allowed: boolean;
  /**
   * The object as the policy leaves it, with a custom kind's defaults applied after each mutation (absent when
   * refused, and on DELETE). Pass it to `create` or `update` to check it as the apiserver then does (pruning, the
   * schema, the CRD's rules).
   */
  readonly object?: object;
  /** True when the policy changed the object. */
  readonly mutated: boolean;
  /** The refusal the apiserver sends: its message, reason and code. */
  readonly status?: PolicyAdmission['status'];
  /** The warnings sent to the client. */
  readonly warnings: readonly string[];
}

/** A policy and its binding: `definePolicy`'s or `defineMutatingPolicy`'s result, or the two objects. */
export type PolicyPairSource =
  | { manifests(): readonly object[] }
  | { readonly policy: object; readonly binding: object };

/** The Go side of the policy functions. */
export interface PolicyApi {
  checkPolicy(policy: string, crds: string): string;
  evaluatePolicy(policy: string, binding: string, request: string): string;
  evaluateMutatingPolicy(policy: string, binding: string, request: string): string;
}

/** `checkPolicy`, `evaluatePolicy` and `evaluateMutatingPolicy` of a validator. */
export function policyMethods(
  api: PolicyApi,
  crdOf: (source: object) => Json,
  call: Call,
): {
  checkPolicy(policy: PolicySource, crds?: readonly object[]): PolicyCheck;
  evaluatePolicy(policy: PolicyPairSource, request: PolicyRequest): PolicyAdmission;
  evaluateMutatingPolicy(policy: PolicyPairSource, request: MutationRequest): MutationAdmission;
} {
  return {
    checkPolicy(source, crds = []) {
      const policy = policyOf(source);
      const found = call<{ field: string; detail: string; typeCheck: boolean }[] | null>(
        api.checkPolicy(JSON.stringify(policy), JSON.stringify(crds.map(crdOf))),
      );
      const problems = (found ?? []).map((p) => {
        const expression = expressionAt(policy, p.field);
        return { ...p, ...(expression !== undefined ? { expression } : {}) };
      });
      return { ok: problems.length === 0, problems };
    },
    evaluatePolicy(source, request) {
      const [policy, binding] = pairOf(source, 'ValidatingAdmissionPolicy');
      const out = call<Omit<PolicyAdmission, 'allowed'> & { warnings: string[] | null }>(
        api.evaluatePolicy(
          JSON.stringify(policy),
          JSON.stringify(binding),
          JSON.stringify(requestOf(request, policy, source)),
        ),
      );
      return { ...out, allowed: out.status === undefined, warnings: out.warnings ?? [] };
    },
    evaluateMutatingPolicy(source, request) {
      const [policy, binding] = pairOf(source, 'MutatingAdmissionPolicy');
      const crd = request.crd === undefined ? {} : { crd: crdOf(request.crd) };
      const out = call<
        Omit<MutationAdmission, 'allowed' | 'mutated'> & { mutated?: boolean; warnings: string[] | null }
      >(
        api.evaluateMutatingPolicy(
          JSON.stringify(policy),
          JSON.stringify(binding),
          JSON.stringify({ ...requestOf(request, policy, source), ...crd }),
        ),
      );
      return { ...out, allowed: out.status === undefined, mutated: out.mutated ?? false, warnings: out.warnings ?? [] };
    },
  };
}

/** The policy and binding of a source, each of the kind expected. */
/** The param kind of a `definePolicy` or `defineMutatingPolicy` definition. */
function paramKindOf(definition: unknown): KindRef | undefined {
  const kind = (definition as { params?: { kind?: KindRef } } | undefined)?.params?.kind;
  return typeof kind?.plural === 'string' ? kind : undefined;
}

function pairOf(source: PolicyPairSource, kind: string): [object, object] {
  const [policy, binding] = 'manifests' in source ? source.manifests() : [source.policy, source.binding];
  kindOf(policy, kind, 'policy');
  kindOf(binding, `${kind}Binding`, 'binding');
  return [policy as object, binding as object];
}

function kindOf(value: unknown, kind: string, what: string): void {
  if (typeof value !== 'object' || value === null || (value as Json).kind !== kind) {
    throw new TestenvError('InvalidOption', `the ${what} must be a ${kind} (kind: ${kind})`);
  }
}

/**
 * The request as the Go side reads it. A policy with a `paramKind` and no `params` in the request has none: their
 * kind (and so its scope) is the definition's.
 */
function requestOf(r: PolicyRequest, policy: object, source: PolicyPairSource): Json {
  const paramKind = (policy as { spec?: { paramKind?: { kind?: string } } }).spec?.paramKind;
  let params = r.params;
  if (params === undefined && paramKind !== undefined) {
    const kind = 'definition' in source ? paramKindOf(source.definition) : undefined;
    if (kind === undefined)
      throw new TestenvError(
        'InvalidOption',
        `the policy's params are ${paramKind.kind} objects: pass request.params ({ kind, objects }, objects: [] for none) so their scope is known`,
      );
    params = { kind, objects: [] };
  }
  return {
    operation: r.operation,
    object: r.object,
    oldObject: r.oldObject,
    group: r.kind.group,
    version: r.kind.version,
    resource: r.kind.plural,
    kind: r.kind.kind,
    namespaced: r.kind.namespaced,
    namespace: r.namespace,
    params: params?.objects,
    paramResource: params?.kind.plural,
    paramNamespaced: params?.kind.namespaced ?? false,
    user: r.user?.username ?? '',
    groups: r.user?.groups ?? [],
    dryRun: r.dryRun ?? false,
  };
}

function policyOf(source: PolicySource): Json {
  const policy =
    'manifests' in source && typeof source.manifests === 'function' ? (source.manifests()[0] as unknown) : source;
  const kind = typeof policy === 'object' && policy !== null ? (policy as Json).kind : undefined;
  if (kind !== 'ValidatingAdmissionPolicy' && kind !== 'MutatingAdmissionPolicy') {
    throw new TestenvError(
      'InvalidOption',
      'expected a Validating- or MutatingAdmissionPolicy, or a policy made by definePolicy or defineMutatingPolicy',
    );
  }
  return policy as Json;
}

/** The text at `spec.validations[0].expression` (and the like) of `policy`. */
function expressionAt(policy: Json, field: string): string | undefined {
  let node: unknown = policy;
  for (const [, key, index] of field.matchAll(/([^.[\]]+)(?:\[(\d+)\])?/g)) {
    node = (node as Json | undefined)?.[key as string];
    if (index !== undefined) node = Array.isArray(node) ? node[Number(index)] : undefined;
  }
  return typeof node === 'string' ? node : undefined;
}
