/**
 * @module @opkit/testenv/cel
 * The apiserver's validation of CRDs and custom resources, offline: `loadValidator()` runs the Kubernetes apiserver's
 * own Go code (the version the test control plane runs), compiled to WebAssembly, in this process. No cluster, no Go.
 *
 * - `checkCrd(crd)` gives the errors the apiserver answers to creating the CRD: structural schema, every CEL rule
 *   compiled with types against the node it sits on (a typo in a field name, a type error, `oldSelf` where no old
 *   value exists) and each rule's estimated cost against the per-rule and per-CRD budgets.
 * - `create(kind, object)` and `update(kind, object, old)` admit an object as the apiserver does before storing it:
 *   unknown fields pruned, defaults applied, the OpenAPI schema, list invariants, then the `x-kubernetes-validations`
 *   rules (transition rules with the old object, ratcheting on update). The result carries the object as it would be
 *   stored and, when refused, the same 422 `Status` (message, field causes) the apiserver sends. An update needs
 *   `metadata.resourceVersion`, as a PUT of a custom resource does (the apiserver's store refuses it without one,
 *   before validation, with its own 422); `old` stands for the stored object, and its resourceVersion is not compared.
 *
 * - `evaluatePolicy(policy, request)` decides a write through a ValidatingAdmissionPolicy and its binding as the
 *   apiserver's admission plugin does (its dispatcher, run here): the refusal, the warnings, the audit annotations.
 * - `evaluateMutatingPolicy(policy, request)` mutates a write through a MutatingAdmissionPolicy and its binding as the
 *   apiserver's mutating admission plugin does (its dispatcher and its JSON patch and apply-configuration patchers).
 * - `checkPolicy(policy, crds)` compiles a Validating- or MutatingAdmissionPolicy's expressions as the apiserver does on
 *   create, and type-checks them against the matched kinds' schemas: a ValidatingAdmissionPolicy's validations as the
 *   apiserver's type checker does; a MutatingAdmissionPolicy's variables, match conditions and mutations (the fields
 *   and values of apply configurations, the constant paths of JSON patches) with the same typed environment, since the
 *   apiserver has no type checker for mutations.
 *
 * Guarantees: results equal the apiserver's (a differential test in this package holds it to the real apiserver over
 * generated objects); every Kubernetes CEL library the pinned version serves to CRDs is there, because it is that
 * version's code. Costs: loading takes about 1.5 s and 460 MiB of memory, once per process; a check of a
 * CRD then takes milliseconds (its rules are compiled once and cached). The Go runtime lives in its own V8 context:
 * it sets no global of this process.
 */
import { createContext, runInContext } from 'node:vm';
import {
  type MutationAdmission,
  type MutationRequest,
  type PolicyAdmission,
  type PolicyApi,
  type PolicyCheck,
  type PolicyPairSource,
  type PolicyRequest,
  type PolicySource,
  policyMethods,
} from './cel-policy.ts';
import { resourceVersionChecked } from './cel-store.ts';
import { TestenvError } from './errors.ts';
import { prepareValidation, type ValidationManifest, validationWasm } from './validation-wasm.ts';

export type {
  KindRef,
  MutationAdmission,
  MutationRequest,
  PolicyAdmission,
  PolicyCheck,
  PolicyPairSource,
  PolicyProblem,
  PolicyRequest,
  PolicySource,
} from './cel-policy.ts';
export type { ValidationManifest } from './validation-wasm.ts';

/** A CRD as JSON, or anything with a `crd()` method returning one (a kind made by `defineKind`). */
export type CrdSource = object | { crd(): object };

/** One field error of a 422 `Status`, as the apiserver sends it in `details.causes`. */
export interface StatusCause {
  /** `FieldValueInvalid`, `FieldValueForbidden`, `FieldValueRequired`, … */
  readonly reason: string;
  /** What is wrong, e.g. `Invalid value: 200: at most 100` (the value, then the rule's message). */
  readonly message: string;
  /** The field at fault, e.g. `spec.replicas` (absent for an error of the whole object). */
  readonly field?: string;
}

/** The `Status` of the apiserver's refusal: a 422 `Invalid` for what validation refuses. */
export interface InvalidStatus {
  /** Always `Status`. */
  readonly kind: 'Status';
  /** Always `v1`. */
  readonly apiVersion: 'v1';
  /** Always `Failure`. */
  readonly status: 'Failure';
  /** e.g. `AppService.app.example.com "web" is invalid: spec.replicas: Invalid value: 200: at most 100`. */
  readonly message: string;
  /** `Invalid` for a validation error (422); another reason for a refusal before validation (e.g. `BadRequest`). */
  readonly reason: string;
  /** The object (`name`, `group`, `kind`) and its field errors (`causes`). */
  readonly details: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly StatusCause[];
  };
  /** The HTTP status: 422 for `Invalid`. */
  readonly code: number;
}

/** What the apiserver would do with a write: store `object`, or refuse it with `status`. */
export interface Admission<T = Record<string, unknown>> {
  /** True when the apiserver would store the object. */
  readonly allowed: boolean;
  /** The object as the apiserver would store it: unknown fields pruned, defaults set, status kept or dropped. */
  readonly object: T;
  /** The 422 answer, when refused. */
  readonly status?: InvalidStatus;
  /** `status.details.causes`, or none. */
  readonly causes: readonly StatusCause[];
}

/** One error of `checkCrd`, located. */
export interface CrdProblem {
  /** The apiserver's field path, e.g. `spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`. */
  readonly field: string;
  /** `FieldValueInvalid`, `FieldValueForbidden`, … */
  readonly reason: string;
  /** What is wrong, without the offending value: e.g. `compilation failed: ERROR: <input>:1:6: undefined field 'replicass'…`. */
  readonly detail: string;
  /** The version whose schema holds it (absent when several versions share that schema: the apiserver names none). */
  readonly version?: string;
  /** The schema node, as a path of the object: `spec.template.image`, `spec.ports[*]`, `spec.labels{*}`, or `.` for the root. */
  readonly schemaPath?: string;
  /** The rule's expression, when the problem is a rule's (compilation, cost, message expression, field path). */
  readonly rule?: string;
  /** Which field of that rule is at fault, when it is not the expression: `messageExpression`, `fieldPath`, `reason`, …. */
  readonly ruleField?: string;
}

/** What the apiserver answers to creating a CRD: `ok`, or its errors, each located. */
export interface CrdCheck {
  /** True when the apiserver would create the CRD. */
  readonly ok: boolean;
  /** Each error of the apiserver's answer, located by version, schema path and rule. */
  readonly problems: readonly CrdProblem[];
  /** The apiserver's 422 answer, when not ok. */
  readonly status?: InvalidStatus;
}

/** How a write is made. */
export interface WriteOptions {
  /** The served version the object is written as (default: its `apiVersion`, else the storage version). */
  readonly version?: string;
}

/** The apiserver's CRD and custom-resource validation, in this process. */
export interface Validator {
  /** What it was built from: the Kubernetes version whose code it runs, and the Go that compiled it. */
  readonly manifest: ValidationManifest;
  /** The errors the apiserver answers to creating `crd`. */
  checkCrd(crd: CrdSource): CrdCheck;
  /** Creating `object` (its namespace defaults to `default`). */
  create<T extends object>(crd: CrdSource, object: T, options?: WriteOptions): Admission<T>;
  /**
   * Updating `old` to `object`: transition rules see `oldSelf`, and errors already in `old` are ratcheted. Without a
   * `metadata.resourceVersion` in `object` (or with `"0"`), refused as the apiserver refuses that PUT, with nothing
   * else checked: 422 `metadata.resourceVersion: Invalid value: 0: must be specified for an update`.
   */
  update<T extends object>(crd: CrdSource, object: T, old: T, options?: WriteOptions): Admission<T>;
  /**
   * Compiles every expression of a Validating- or MutatingAdmissionPolicy as the apiserver does, and type-checks them
   * against the schemas of the kinds it matches among `crds` (built-in kinds are checked untyped): a validating
   * policy's validations; a mutating policy's variables, match conditions and mutations, down to the fields an apply
   * configuration sets and the constant paths of a JSON patch.
   */
  checkPolicy(policy: PolicySource, crds?: readonly CrdSource[]): PolicyCheck;
  /**
   * A write through a ValidatingAdmissionPolicy and its binding (`definePolicy`'s, or `{ policy, binding }`), as the
   * apiserver's admission plugin decides it: matching, match conditions, params, validations with their actions,
   * audit annotations.
   */
  evaluatePolicy(policy: PolicyPairSource, request: PolicyRequest): PolicyAdmission;
  /**
   * A write through a MutatingAdmissionPolicy and its binding (`defineMutatingPolicy`'s, or `{ policy, binding }`), as
   * the apiserver's mutating admission plugin makes it: matching, match conditions, params, variables, then each
   * mutation in order (JSON patches; apply configurations merged by the kind's schema, a custom kind's from
   * `request.crd`), with a custom kind's defaults applied after each. A built-in kind's defaults are not applied.
   */
  evaluateMutatingPolicy(policy: PolicyPairSource, request: MutationRequest): MutationAdmission;
}

/** How `loadValidator` and `prepareValidator` report. */
export interface LoadOptions {
  /** Progress of a first build (in the repository only). Default: stderr. */
  readonly log?: (line: string) => void;
}

interface GoApi extends PolicyApi {
  checkCRD(crd: string): string;
  admit(crd: string, version: string, object: string, old: string): string;
}

/** The parts of WebAssembly and of Go's `wasm_exec.js` used here (the project's TypeScript lib has no DOM types). */
type WasmInstance = object;
type WasmImports = Record<string, Record<string, unknown>>;
interface WasmApi {
  instantiate(bytes: Uint8Array, imports: WasmImports): Promise<{ instance: WasmInstance }>;
}
interface GoRuntime {
  readonly importObject: WasmImports;
  run(instance: WasmInstance): Promise<void>;
}

let loading: Promise<Validator> | undefined;

/** The default `LoadOptions.log`. */
const toStderr = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** The validator, loaded once per process. */
export function loadValidator(options: LoadOptions = {}): Promise<Validator> {
  loading ??= load(options).catch((e: unknown) => {
    loading = undefined;
    throw e;
  });
  return loading;
}

/**
 * Makes sure `loadValidator()` will not have to build (in the repository, where the validator is built from Go sources
 * on first use), without loading it: for a test runner's set-up step. A published package has it built already.
 */
export function prepareValidator(options: LoadOptions = {}): Promise<ValidationManifest> {
  return prepareValidation(options.log ?? toStderr);
}

async function load(options: LoadOptions): Promise<Validator> {
  const log = options.log ?? toStderr;
  const assets = await validationWasm(log);
  const context = createContext({
    crypto: globalThis.crypto,
    performance: globalThis.performance,
    TextEncoder,
    TextDecoder,
    setTimeout,
    clearTimeout,
    // the Go runtime's stdout and stderr (wasm_exec.js writes them with console.log)
    console: {
      log: (line: string) => log(`[k8s validation] ${line}`),
      warn: (...parts: unknown[]) => log(`[k8s validation] ${parts.join(' ')}`),
      error: (...parts: unknown[]) => log(`[k8s validation] ${parts.join(' ')}`),
    },
  });
  runInContext(assets.wasmExec, context, { filename: 'wasm_exec.js' });
  const Go = (context as { Go?: new () => GoRuntime }).Go;
  if (!Go) throw new TestenvError('BinariesMissing', 'wasm_exec.js of the offline validator defines no Go runtime');
  const go = new Go();
  // instantiated by the context's own WebAssembly: wasm_exec.js checks the instance's class
  const wasm = runInContext('WebAssembly', context) as WasmApi;
  const { instance } = await wasm.instantiate(assets.wasm, go.importObject);
  const state = { exited: false };
  // the Go program runs until the process ends; if it exits (a fatal error), the next loadValidator() loads it again
  void go.run(instance).finally(() => {
    state.exited = true;
    loading = undefined;
  });
  const api = (context as { __opkitKubeValidation?: GoApi }).__opkitKubeValidation;
  if (!api) throw new TestenvError('BinariesMissing', 'the offline validator did not start');
  return validator(guarded(api, state), assets.manifest);
}

/** The Go functions, each refusing to run once the Go program exited (it would throw "Go program has already exited"). */
function guarded(api: GoApi, state: { exited: boolean }): GoApi {
  const alive =
    <A extends unknown[]>(f: (...args: A) => string) =>
    (...args: A): string => {
      if (state.exited) {
        throw new TestenvError(
          'ValidatorFailed',
          'the offline validator stopped (its Go runtime exited): call loadValidator() again',
        );
      }
      return f(...args);
    };
  return {
    checkCRD: alive((crd: string) => api.checkCRD(crd)),
    admit: alive((crd: string, version: string, object: string, old: string) => api.admit(crd, version, object, old)),
    checkPolicy: alive((policy: string, crds: string) => api.checkPolicy(policy, crds)),
    evaluatePolicy: alive((policy: string, binding: string, request: string) =>
      api.evaluatePolicy(policy, binding, request),
    ),
    evaluateMutatingPolicy: alive((policy: string, binding: string, request: string) =>
      api.evaluateMutatingPolicy(policy, binding, request),
    ),
  };
}

function validator(api: GoApi, manifest: ValidationManifest): Validator {
  const admit = <T extends object>(crdSource: CrdSource, object: T, old: T | undefined, options?: WriteOptions) => {
    const crd = crdOf(crdSource);
    const version = options?.version ?? versionOf(object) ?? storageVersion(crd);
    const out = call<{ object: T; status?: InvalidStatus }>(
      api.admit(JSON.stringify(crd), version, JSON.stringify(object), old === undefined ? '' : JSON.stringify(old)),
    );
    return {
      allowed: out.status === undefined,
      object: out.object,
      ...(out.status ? { status: out.status } : {}),
      causes: out.status?.details.causes ?? [],
    };
  };
  return {
    manifest,
    checkCrd(crdSource) {
      const crd = crdOf(crdSource);
      const out = call<{ status: InvalidStatus; errors: { type: string; field: string; detail: string }[] } | null>(
        api.checkCRD(JSON.stringify(crd)),
      );
      if (out === null) return { ok: true, problems: [] };
      return {
        ok: false,
        status: out.status,
        problems: out.errors.map((e) => locate(crd, { field: e.field, reason: e.type, detail: e.detail })),
      };
    },
    ...policyMethods(api, crdOf, call),
    create: (crd, object, options) => admit(crd, object, undefined, options),
    update: (crd, object, old, options) => resourceVersionChecked(crdOf(crd), object, admit(crd, object, old, options)),
  };
}

/** The result of a Go function: its value, or a `TestenvError` (`InvalidOption` for refused input, `ValidatorFailed` for a panic). */
function call<T>(json: string): T {
  const out = JSON.parse(json) as { result?: T; failure?: string; panic?: string };
  if (out.panic !== undefined) throw new TestenvError('ValidatorFailed', `the offline validator failed: ${out.panic}`);
  if (out.failure !== undefined) throw new TestenvError('InvalidOption', out.failure);
  return out.result as T;
}

type Json = Record<string, unknown>;

function crdOf(source: CrdSource): Json {
  const crd = 'crd' in source && typeof source.crd === 'function' ? (source.crd() as unknown) : source;
  if (typeof crd !== 'object' || crd === null || (crd as Json).kind !== 'CustomResourceDefinition') {
    throw new TestenvError('InvalidOption', 'expected a CustomResourceDefinition, or a kind whose crd() returns one');
  }
  return crd as Json;
}

function versionOf(object: object): string | undefined {
  const apiVersion = (object as Json).apiVersion;
  return typeof apiVersion === 'string' && apiVersion.includes('/') ? apiVersion.split('/')[1] : undefined;
}

function versions(crd: Json): Json[] {
  const spec = crd.spec as Json | undefined;
  return Array.isArray(spec?.versions) ? (spec.versions as Json[]) : [];
}

function storageVersion(crd: Json): string {
  const all = versions(crd);
  const v = all.find((x) => x.storage === true) ?? all[0];
  if (typeof v?.name !== 'string')
    throw new TestenvError('InvalidOption', 'the CustomResourceDefinition has no versions');
  return v.name;
}

/** A field in a version's schema, or in `spec.validation` (where the apiserver reports a schema all versions share). */
const SCHEMA_FIELD = /^spec\.(?:versions\[(\d+)\]\.schema|validation)\.openAPIV3Schema(.*)$/;

/** Adds the version, the schema node (as an object path) and the rule to a CRD error in a version's schema. */
function locate(crd: Json, problem: { field: string; reason: string; detail: string }): CrdProblem {
  const match = SCHEMA_FIELD.exec(problem.field);
  if (!match) return problem;
  const shared = match[1] === undefined;
  const v = versions(crd)[shared ? 0 : Number(match[1])];
  let node = ((v?.schema as Json | undefined)?.openAPIV3Schema ?? {}) as Json;
  let path = '';
  let rule: string | undefined;
  let ruleField: string | undefined;
  for (const [, key, index] of (match[2] as string).matchAll(/\.([^.[]+)(?:\[([^\]]*)\])?/g)) {
    if (key === 'properties' && index !== undefined) {
      path += path === '' ? index : `.${index}`;
      node = ((node.properties as Json | undefined)?.[index] ?? {}) as Json;
    } else if (key === 'items') {
      path += '[*]';
      node = (node.items ?? {}) as Json;
    } else if (key === 'additionalProperties') {
      path += '{*}';
      node = (node.additionalProperties ?? {}) as Json;
    } else if (key === 'x-kubernetes-validations' && index !== undefined) {
      const r = (node['x-kubernetes-validations'] as Json[] | undefined)?.[Number(index)]?.rule;
      if (typeof r === 'string') rule = r;
      const after = /\.x-kubernetes-validations\[\d+\]\.(\w+)$/.exec(problem.field)?.[1];
      if (after !== undefined && after !== 'rule') ruleField = after;
      break;
    } else {
      break;
    }
  }
  return {
    ...problem,
    ...(typeof v?.name === 'string' && (!shared || versions(crd).length === 1) ? { version: v.name } : {}),
    schemaPath: path === '' ? '.' : path,
    ...(rule !== undefined ? { rule } : {}),
    ...(ruleField !== undefined ? { ruleField } : {}),
  };
}
