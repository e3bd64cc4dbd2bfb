/**
 * @module webhook/admission
 * Typed admission handlers for `AdmissionReview` (`admission.k8s.io/v1`): a defaulter and a validator per kind, and
 * the field errors a validator returns.
 *
 * - `defaulter(resource, fn)`: `fn` mutates a typed deep copy of the object; the response is the JSONPatch from the
 *   object as sent to the object as mutated, computed by fast-json-patch. No change, no patch. Answers CREATE and
 *   UPDATE (its `operations`); any other operation is allowed untouched.
 * - `validator(resource, v)`: `create(obj)`, `update(obj, old)`, `delete(old)`; each returns field errors and
 *   warnings (or nothing). Errors deny the request with a 422 `Invalid` status whose message is Kubernetes' own
 *   (`AppService.app.example.com "web" is invalid: spec.replicas: Invalid value: 7: …`), and one `cause` per field;
 *   warnings are passed to the client (kubectl prints `Warning: …`) whether the request is allowed or not. Its
 *   `operations` are those it has a check for (`create` → CREATE, `update` → UPDATE, `delete` → DELETE): what a
 *   webhook of it covers unless its definition lists operations (webhook/manifests); an operation without a check
 *   is allowed.
 *
 * Guarantees: a handler never throws to the server — an exception becomes a denial with code 500 naming the kind, as
 * controller-runtime answers a handler's recovered panic (the apiserver refuses a denial whatever the webhook's
 * `failurePolicy`) — and the response carries the request's `uid`. Handlers get an `AbortSignal` that aborts 250 ms
 * before the apiserver's timeout; the server then answers the call as failed (HTTP 504, so the `failurePolicy`
 * decides) and drops what the handler returns later.
 */
import fastJsonPatch from 'fast-json-patch';
import type { Kind, KubeObject } from '../client/resource.ts';

/** The `request` of an AdmissionReview. */
export interface AdmissionRequest {
  /** Identifies this call; the response must carry it back. */
  readonly uid: string;
  /** The kind of `object` (the version the webhook is registered for). */
  readonly kind: { group: string; version: string; kind: string };
  /** The resource being written. */
  readonly resource: { group: string; version: string; resource: string };
  /** The subresource, e.g. `status` or `scale`, when the request is for one. */
  readonly subResource?: string;
  /** The kind the client sent, when the apiserver converted it to `kind` for this webhook. */
  readonly requestKind?: { group: string; version: string; kind: string };
  /** The object's name (absent on a create whose name the server generates). */
  readonly name?: string;
  /** The object's namespace, for namespaced kinds. */
  readonly namespace?: string;
  /** What the client does. */
  readonly operation: Operation;
  /** Who is making the request. */
  readonly userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  /** The object as written (CREATE, UPDATE); absent on DELETE. */
  readonly object?: unknown;
  /** The object as it was (UPDATE, DELETE). */
  readonly oldObject?: unknown;
  /** The request will not be stored: a webhook with side effects must not cause them. */
  readonly dryRun?: boolean;
  /** The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`). */
  readonly options?: unknown;
}

/** A `metav1.Status` as an admission response's `result`. */
export interface AdmissionStatus {
  /** `Failure` for a denial. */
  status?: 'Success' | 'Failure';
  /** The HTTP status the client sees, e.g. 403 or 422. */
  code?: number;
  /** Machine-readable reason, e.g. `Invalid` or `Forbidden`. */
  reason?: string;
  /** What the client is told. */
  message?: string;
  /** The object concerned and the field causes of an Invalid denial. */
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: { reason: string; message: string; field: string }[];
  };
}

/** The `response` of an AdmissionReview. */
export interface AdmissionResponse {
  /** The request's `uid`. */
  uid: string;
  /** Whether the request may go on. */
  allowed: boolean;
  /** Why it was denied (or a warning-free success status). */
  status?: AdmissionStatus;
  /** A mutating webhook's changes: a base64-encoded JSON patch. */
  patch?: string;
  /** The patch's format (always `JSONPatch`). */
  patchType?: 'JSONPatch';
  /** Warnings the client prints (kubectl: `Warning: …`), whether allowed or not. */
  warnings?: string[];
}

/** What a handler is given besides the request. */
export interface AdmissionContext {
  /**
   * Aborts 250 ms before the apiserver's timeout for this call. The server then answers the call as failed (HTTP
   * 504: the webhook's `failurePolicy` decides, `Ignore` admits) and drops whatever the handler returns afterwards.
   */
  readonly signal: AbortSignal;
}

/** An operation an admission webhook can be called for. */
export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

/**
 * Answers one AdmissionReview request; the `WebhookServer` serves one per path. `defaulter` and `validator` make typed
 * ones, which say in `operations` what they answer; a function of your own may leave it out.
 */
export interface AdmissionHandler {
  (request: AdmissionRequest, ctx: AdmissionContext): Promise<AdmissionResponse>;
  /**
   * The operations this handler answers (a `validator`'s: one per check it has), when it knows them: a webhook
   * definition without `operations` covers these. Absent on a handler of your own.
   */
  readonly operations?: readonly Operation[];
}

/** The type of one field error, as Kubernetes' `field.ErrorType`. */
export type FieldErrorType = 'Invalid' | 'Required' | 'Forbidden' | 'NotSupported' | 'Duplicate' | 'TooLong';

/** One problem with one field: `spec.replicas: Invalid value: 7: must be even`. */
export interface FieldError {
  /** Which kind of problem, as Kubernetes' `field.ErrorType`. */
  readonly type: FieldErrorType;
  /** The field's path, e.g. `spec.env[2].name`. */
  readonly field: string;
  /** The value at fault (shown for Invalid, NotSupported and Duplicate). */
  readonly value?: unknown;
  /** What is wrong with it, e.g. `must be even`. */
  readonly detail?: string;
}

/**
 * The field errors of Kubernetes' `field` package, for validators: `fieldErrors.invalid('spec.replicas', 7, 'must be
 * even')`.
 */
export const fieldErrors = {
  /** `field: Invalid value: <value>: <detail>`: the value is wrong. */
  invalid: (field: string, value: unknown, detail: string): FieldError => ({ type: 'Invalid', field, value, detail }),
  /** `field: Required value`: the field is missing. */
  required: (field: string, detail = ''): FieldError => ({ type: 'Required', field, detail }),
  /** `field: Forbidden: <detail>`: the field may not be set (or changed) here. */
  forbidden: (field: string, detail: string): FieldError => ({ type: 'Forbidden', field, detail }),
  /** `field: Unsupported value: <value>: supported values: …`: the value is not one of `supported`. */
  notSupported: (field: string, value: unknown, supported: readonly string[]): FieldError => ({
    type: 'NotSupported',
    field,
    value,
    detail: `supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`,
  }),
  /** `field: Duplicate value: <value>`: the value is already listed (a key that must be unique). */
  duplicate: (field: string, value: unknown): FieldError => ({ type: 'Duplicate', field, value }),
  /** `field: Too long: may not be more than <max> bytes`. */
  tooLong: (field: string, value: unknown, max: number): FieldError => ({
    type: 'TooLong',
    field,
    value,
    detail: `may not be more than ${max} bytes`,
  }),
};

const TYPE_TEXT: Record<FieldErrorType, string> = {
  Invalid: 'Invalid value',
  Required: 'Required value',
  Forbidden: 'Forbidden',
  NotSupported: 'Unsupported value',
  Duplicate: 'Duplicate value',
  TooLong: 'Too long',
};

/** Kubernetes' rendering of a field error (`field.Error.Error()`). */
export function formatFieldError(e: FieldError): string {
  const withValue = e.type === 'Invalid' || e.type === 'NotSupported' || e.type === 'Duplicate';
  const parts = [`${e.field}: ${TYPE_TEXT[e.type]}`];
  if (withValue) parts.push(showValue(e.value));
  if (e.detail) parts.push(e.detail);
  return parts.join(': ');
}

function showValue(v: unknown): string {
  if (v === undefined) return '<nil>';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || v === null) return String(v);
  const json = JSON.stringify(v);
  return json.length > 256 ? `${json.slice(0, 253)}...` : json;
}

/** What a validation returns: field errors deny the request; warnings are shown either way. */
export interface ValidationResult {
  /** Problems that deny the request (422 Invalid, one cause per field). */
  readonly errors?: readonly FieldError[];
  /** Warnings shown to the client, whether the request is allowed or not. */
  readonly warnings?: readonly string[];
}

// biome-ignore lint/suspicious/noConfusingVoidType: a check that finds nothing may return nothing (a `void` function)
type Validation = ValidationResult | undefined | void;

/** Checks per operation; an operation without a check is allowed. */
export interface Validator<T extends KubeObject> {
  /** Checks an object being created. */
  create?(obj: T, ctx: AdmissionContext & { request: AdmissionRequest }): Validation | Promise<Validation>;
  /** Checks an update from `old` to `obj`. */
  update?(obj: T, old: T, ctx: AdmissionContext & { request: AdmissionRequest }): Validation | Promise<Validation>;
  /** Checks a delete of `old`. */
  delete?(old: T, ctx: AdmissionContext & { request: AdmissionRequest }): Validation | Promise<Validation>;
}

/** Sets defaults on `obj` in place (or returns a replacement). */
export type DefaultFunc<T extends KubeObject> = (
  obj: T,
  ctx: AdmissionContext & { request: AdmissionRequest },
  // biome-ignore lint/suspicious/noConfusingVoidType: a defaulter that edits in place is a `void` function
) => T | undefined | void | Promise<T | undefined | void>;

/** A mutating handler: `fn` edits a typed copy; the response patches the difference. Answers CREATE and UPDATE. */
export function defaulter<T extends KubeObject>(resource: Kind<T>, fn: DefaultFunc<T>): AdmissionHandler {
  return answering(resource, ['CREATE', 'UPDATE'], async (request, ctx) => {
    if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return allow(request.uid);
    const original = request.object;
    if (!isObject(original)) return deny(request.uid, 400, 'BadRequest', 'the request carries no object');
    const copy = structuredClone(original) as T;
    const result = await fn(copy, { ...ctx, request });
    const mutated = result ?? copy;
    const patch = fastJsonPatch.compare(original, mutated as object);
    if (patch.length === 0) return allow(request.uid);
    return {
      uid: request.uid,
      allowed: true,
      patchType: 'JSONPatch',
      patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
    };
  });
}

/** The check of each operation a `Validator` can have, in the order a configuration lists them. */
const CHECKS = [
  ['create', 'CREATE'],
  ['update', 'UPDATE'],
  ['delete', 'DELETE'],
] as const;

/** A validating handler for `resource`; it answers the operations `v` has a check for. */
export function validator<T extends KubeObject>(resource: Kind<T>, v: Validator<T>): AdmissionHandler {
  const operations = CHECKS.filter(([check]) => v[check] !== undefined).map(([, operation]) => operation);
  return answering(resource, operations, async (request, ctx) => {
    const c = { ...ctx, request };
    let result: Validation;
    switch (request.operation) {
      case 'CREATE':
        if (!isObject(request.object)) return deny(request.uid, 400, 'BadRequest', 'the request carries no object');
        result = await v.create?.(request.object as T, c);
        break;
      case 'UPDATE':
        if (!isObject(request.object) || !isObject(request.oldObject)) {
          return deny(request.uid, 400, 'BadRequest', 'an update must carry object and oldObject');
        }
        result = await v.update?.(request.object as T, request.oldObject as T, c);
        break;
      case 'DELETE':
        if (!isObject(request.oldObject)) return allow(request.uid);
        result = await v.delete?.(request.oldObject as T, c);
        break;
      default:
        return allow(request.uid);
    }
    return validationResponse(resource, request, result ?? {});
  });
}

/** The response for a validation result: allowed with warnings, or a 422 Invalid naming every field. */
export function validationResponse(
  resource: Kind,
  request: AdmissionRequest,
  result: ValidationResult,
): AdmissionResponse {
  const warnings = result.warnings && result.warnings.length > 0 ? { warnings: [...result.warnings] } : {};
  const errors = result.errors ?? [];
  if (errors.length === 0) return { uid: request.uid, allowed: true, ...warnings };
  const messages = errors.map(formatFieldError);
  const name = request.name || objectName(request.object) || objectName(request.oldObject) || '';
  const qualified = resource.group === '' ? resource.kind : `${resource.kind}.${resource.group}`;
  const list = messages.length === 1 ? (messages[0] as string) : `[${messages.join(', ')}]`;
  return {
    uid: request.uid,
    allowed: false,
    status: {
      status: 'Failure',
      code: 422,
      reason: 'Invalid',
      message: `${qualified} ${JSON.stringify(name)} is invalid: ${list}`,
      details: {
        name,
        group: resource.group,
        kind: resource.kind,
        // as Kubernetes' NewInvalid: the cause's message is the error without the field (kubectl prints both)
        causes: errors.map((e, i) => ({
          reason: `FieldValue${e.type}`,
          message: (messages[i] as string).slice(e.field.length + 2),
          field: e.field,
        })),
      },
    },
    ...warnings,
  };
}

export function allow(uid: string): AdmissionResponse {
  return { uid, allowed: true };
}

export function deny(uid: string, code: number, reason: string, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { status: 'Failure', code, reason, message } };
}

/**
 * A handler answering `operations` for `resource`: an exception in `handler` becomes a 500 denial naming the kind
 * instead of a crash.
 */
function answering(resource: Kind, operations: readonly Operation[], handler: AdmissionHandler): AdmissionHandler {
  const guarded = async (request: AdmissionRequest, ctx: AdmissionContext): Promise<AdmissionResponse> => {
    try {
      return await handler(request, ctx);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      return deny(request.uid, 500, 'InternalError', `${resource.kind} admission failed: ${message}`);
    }
  };
  return Object.assign(guarded, { operations: Object.freeze([...operations]) });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function objectName(o: unknown): string | undefined {
  if (!isObject(o) || !isObject(o.metadata)) return undefined;
  const n = o.metadata.name;
  return typeof n === 'string' ? n : undefined;
}
