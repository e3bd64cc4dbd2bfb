/**
 * @module client/errors
 * `ApiError`: every failure of a request to the apiserver, with a stable `code` (from the Status `reason`, or the HTTP
 * status when the reason is absent), the HTTP `status`, the server's `reason` and `message`, the field `causes` of an
 * Invalid error, and `retryAfterSeconds` when the server asked for it. Network failures and client-side timeouts are
 * ApiErrors too (`Network`, `Timeout`), with the original error as `cause`; a watch that stayed silent past its
 * inactivity deadline is `Inactive`; a request its caller aborted is `Aborted`. `toApiError` normalises anything thrown.
 * The message is the server's, except that the field `<nil>` (Go's word for no field: the error of a CEL rule on the
 * object as a whole, without `fieldPath`) is written as what it means, and a patch's strict decoding error leaves out
 * the whole patched object the apiserver quotes before the unknown fields it names.
 *
 * Retryable: Conflict, TooManyRequests, Timeout, ServerTimeout, Unavailable, InternalError, Network, Inactive,
 * Gone (by relisting). Not retryable: NotFound, AlreadyExists, Forbidden, Unauthorized, Invalid, BadRequest, MethodNotAllowed.
 */
import { OpkitError } from '../errors.ts';

/**
 * What went wrong with a request: the Status `reason` of the answer (`Expired` counts as `Gone`, `ServiceUnavailable`
 * as `Unavailable`), else its HTTP status; `Network`, `Timeout`, `Inactive` and `Aborted` for requests that got no
 * answer; `Unknown` for anything else. `ApiError.retryable` says which are worth retrying.
 */
export type ApiErrorCode =
  /** 400: the request is malformed (a bad query, patch or selector). Fix the request: retrying cannot help. */
  | 'BadRequest'
  /** 401: the credentials were refused (after one retry with fresh ones). Fix the kubeconfig or the token. */
  | 'Unauthorized'
  /** 403: the user may not do this (RBAC, or an admission policy). Grant the permission the message names. */
  | 'Forbidden'
  /** 404: no such object, or the apiserver does not serve the kind in that group version. */
  | 'NotFound'
  /** 405: the resource does not accept this verb (e.g. a subresource the kind lacks). */
  | 'MethodNotAllowed'
  /** 409 on a create: an object of that name exists already. */
  | 'AlreadyExists'
  /** 409: a stale `resourceVersion` or a failed precondition. Re-read the object and try again (retryable). */
  | 'Conflict'
  /** 410: a resourceVersion or continue token too old (also `Expired`). List again (retryable by relisting). */
  | 'Gone'
  /** 422: the object fails validation. `causes` names the fields at fault. */
  | 'Invalid'
  /** 415: the patch type is not accepted for this kind (a strategic merge patch of a custom kind). */
  | 'UnsupportedMediaType'
  /** 429: the apiserver throttled the request (after the transport's own retries). Retry later (retryable). */
  | 'TooManyRequests'
  /** 500: the apiserver failed (or a webhook it called did). Retryable. */
  | 'InternalError'
  /** The apiserver gave up on the request in time (Status `ServerTimeout`). Retryable. */
  | 'ServerTimeout'
  /** 504, or no full answer within the client's deadline (default 60 s). Retryable. */
  | 'Timeout'
  /** 503 (Status `ServiceUnavailable`): the apiserver or the API it proxies is not ready. Retryable. */
  | 'Unavailable'
  /** No answer: the connection failed or broke (its error is `cause`). Retryable. */
  | 'Network'
  /** A watch stayed silent (no event, no bookmark) past its inactivity deadline. Watch again (retryable). */
  | 'Inactive'
  /** The caller's signal (or the client's bound one) aborted the request. Its reason is `cause`. */
  | 'Aborted'
  /**
   * A 2xx answer or watch event in protobuf that could not be decoded (it breaks off, names a kind the client has no
   * decoder for, or has a field the pinned Kubernetes types lack: an apiserver newer than the client). The client
   * reads that kind as JSON from then on (a get or list is asked again at once; a watch is restarted by the informer);
   * `protobuf: false` on the client asks for JSON only.
   */
  | 'Malformed'
  /** Any other answer or failure. The message and `status` say what it was. */
  | 'Unknown';

/** One cause of a failed request, e.g. a field an Invalid object got wrong. */
export interface StatusCause {
  /** Machine-readable cause, e.g. `FieldValueRequired`. */
  readonly reason?: string;
  /** What is wrong, for people. */
  readonly message?: string;
  /**
   * The field at fault, e.g. `spec.replicas`; `<nil>` (as the apiserver sends it) for an error of the object as a
   * whole, such as a failed CEL rule on the root of a custom kind's schema without `fieldPath`.
   */
  readonly field?: string;
}

/** The `Status` object the apiserver returns with errors (metav1.Status). */
export interface Status {
  /** Always `Status`. */
  readonly kind?: 'Status';
  /** `Success` or `Failure`. */
  readonly status?: string;
  /** What went wrong, for people. */
  readonly message?: string;
  /** Machine-readable reason (`NotFound`, `Conflict`, `Invalid`, …), the source of `ApiError.code`. */
  readonly reason?: string;
  /** The HTTP status. */
  readonly code?: number;
  /** The object concerned, the field causes, and when to retry. */
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly StatusCause[];
    readonly retryAfterSeconds?: number;
  };
}

const REASONS: Readonly<Record<string, ApiErrorCode>> = {
  BadRequest: 'BadRequest',
  Unauthorized: 'Unauthorized',
  Forbidden: 'Forbidden',
  NotFound: 'NotFound',
  MethodNotAllowed: 'MethodNotAllowed',
  AlreadyExists: 'AlreadyExists',
  Conflict: 'Conflict',
  Gone: 'Gone',
  Expired: 'Gone',
  Invalid: 'Invalid',
  UnsupportedMediaType: 'UnsupportedMediaType',
  TooManyRequests: 'TooManyRequests',
  InternalError: 'InternalError',
  ServerTimeout: 'ServerTimeout',
  Timeout: 'Timeout',
  ServiceUnavailable: 'Unavailable',
};

const STATUSES: Readonly<Record<number, ApiErrorCode>> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'Unavailable',
  504: 'Timeout',
};

const RETRYABLE: ReadonlySet<ApiErrorCode> = new Set([
  'Conflict',
  'Gone',
  'TooManyRequests',
  'InternalError',
  'ServerTimeout',
  'Timeout',
  'Unavailable',
  'Network',
  'Inactive',
]);

/**
 * A failed request to the apiserver (or one that got no answer): `code` says what went wrong, and the server's Status
 * is kept (`status`, `reason`, `causes`, `retryAfterSeconds`).
 *
 * @showModuleComment
 */
export class ApiError extends OpkitError<ApiErrorCode> {
  override readonly name = 'ApiError';
  /** HTTP status, 0 when no response was received. */
  readonly status: number;
  /** The Status `reason` the server sent, if it sent one. */
  readonly reason: string | undefined;
  /** The Status's field causes (an Invalid object's fields at fault); empty when none. */
  readonly causes: readonly StatusCause[];
  /** When the server asked to be retried (Status `retryAfterSeconds`, or the `Retry-After` header), in seconds. */
  readonly retryAfterSeconds: number | undefined;
  /** `METHOD path` of the request. */
  readonly request: string;

  constructor(
    code: ApiErrorCode,
    message: string,
    init: {
      status?: number;
      reason?: string;
      causes?: readonly StatusCause[];
      retryAfterSeconds?: number;
      request?: string;
      cause?: unknown;
    } = {},
  ) {
    super(code, message, { cause: init.cause });
    this.status = init.status ?? 0;
    this.reason = init.reason;
    this.causes = init.causes ?? [];
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.request = init.request ?? '';
  }

  /** True for failures worth retrying (with backoff): conflicts, throttling, timeouts, unavailability, network. */
  get retryable(): boolean {
    return RETRYABLE.has(this.code);
  }

  /** Builds the error from a response status and its body (a Status object when the server sent one). */
  static fromResponse(status: number, body: unknown, request: string, retryAfterHeader?: string): ApiError {
    const s = isStatus(body) ? body : undefined;
    const code = (s?.reason ? REASONS[s.reason] : undefined) ?? STATUSES[status] ?? 'Unknown';
    const headerRetry = retryAfterHeader !== undefined ? Number.parseInt(retryAfterHeader, 10) : Number.NaN;
    const retryAfterSeconds = s?.details?.retryAfterSeconds ?? (Number.isFinite(headerRetry) ? headerRetry : undefined);
    const text = s?.message ?? (typeof body === 'string' && body.length > 0 ? body.slice(0, 500) : `HTTP ${status}`);
    const causes = s?.details?.causes;
    return new ApiError(code, `${request}: ${withoutPatchedObject(explainNoField(text, causes))}`, {
      status,
      ...(s?.reason ? { reason: s.reason } : {}),
      ...(causes ? { causes } : {}),
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      request,
    });
  }
}

/** Go's `field.Path` of no field, as an Invalid error's cause names it. */
const NO_FIELD = '<nil>';
/** What `<nil>` means in an Invalid error's message: the error is the object's (a rule on it without fieldPath). */
const NO_FIELD_MEANING = '(the object as a whole: a rule without fieldPath)';

/**
 * `message` of an Invalid Status whose `causes` include the field `<nil>`, with each error that names it (`is invalid:
 * <nil>: …`, `[<nil>: …`, `, <nil>: …`) naming instead what it means; any other message as it is.
 */
function explainNoField(message: string, causes: readonly StatusCause[] | undefined): string {
  if (!causes?.some((c) => c.field === NO_FIELD)) return message;
  return message.replace(/(is invalid: \[?|, )<nil>: /g, `$1${NO_FIELD_MEANING}: `);
}

/**
 * A message that ends in a strict decoding error (a patch with `fieldValidation: 'Strict'` and a field the schema
 * lacks) without the whole patched object the apiserver puts before it: `patch: strict decoding error: unknown field
 * "spec.colour"`, the part that says what to fix.
 */
function withoutPatchedObject(message: string): string {
  return message.replace(/(patch: )Invalid value: "(?:[^"\\]|\\.)*": (strict decoding error: )/, '$1$2');
}

function isStatus(body: unknown): body is Status {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Status';
}

/** Any thrown value as an ApiError (non-API failures become `Unknown` with the original as `cause`). */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof Error) return new ApiError('Unknown', err.message, { cause: err });
  return new ApiError('Unknown', String(err), { cause: err });
}

/** Whether `err` is an `ApiError`, and of `code` when one is given. */
export function isApiError(err: unknown, code?: ApiErrorCode): err is ApiError {
  return err instanceof ApiError && (code === undefined || err.code === code);
}

/** Whether `err` is an `ApiError` with code `NotFound` (HTTP 404). */
export const isNotFound = (err: unknown): boolean => isApiError(err, 'NotFound');
/**
 * Whether `err` is an `ApiError` with code `Conflict` (HTTP 409: a stale resourceVersion or a failed precondition);
 * re-read and try again.
 */
export const isConflict = (err: unknown): boolean => isApiError(err, 'Conflict');
/** Whether `err` is an `ApiError` with code `AlreadyExists` (a create of a name that is taken). */
export const isAlreadyExists = (err: unknown): boolean => isApiError(err, 'AlreadyExists');
/** Whether `err` is an `ApiError` with code `Gone` (HTTP 410: a resourceVersion or continue token that expired). */
export const isGone = (err: unknown): boolean => isApiError(err, 'Gone');

/**
 * The apiserver's answer to a resourceVersion newer than any it has (after an etcd restore, or a watch cache behind a
 * newer apiserver): a 504 whose Status carries the cause `ResourceVersionTooLarge`. The way out is a fresh list with
 * no resourceVersion, as client-go's reflector does.
 */
export function isResourceVersionTooLarge(err: unknown): boolean {
  return err instanceof ApiError && err.causes.some((c) => c.reason === 'ResourceVersionTooLarge');
}
