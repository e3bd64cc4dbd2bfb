/**
 * @module client/errors
 * `ApiError`: every failure of a request to the apiserver, with a stable `code` (from the Status `reason`, or the HTTP
 * status when the reason is absent), the HTTP `status`, the server's `reason` and `message`, the field `causes` of an
 * Invalid error, and `retryAfterSeconds` when the server asked for it. Network failures and client-side timeouts are
 * ApiErrors too (`Network`, `Timeout`), with the original error as `cause`; a watch that stayed silent past its
 * inactivity deadline is `Inactive`; a request its caller aborted is `Aborted`. `toApiError` normalises anything thrown.
 *
 * Retryable: Conflict, TooManyRequests, Timeout, ServerTimeout, Unavailable, InternalError, Network, Inactive,
 * Gone (by relisting). Not retryable: NotFound, AlreadyExists, Forbidden, Unauthorized, Invalid, BadRequest, MethodNotAllowed.
 */
import { OpkitError } from '../errors.ts';

export type ApiErrorCode =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Invalid'
  | 'UnsupportedMediaType'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServerTimeout'
  | 'Timeout'
  | 'Unavailable'
  | 'Network'
  | 'Inactive'
  | 'Aborted'
  | 'Unknown';

export interface StatusCause {
  readonly reason?: string;
  readonly message?: string;
  readonly field?: string;
}

/** The `Status` object the apiserver returns with errors (metav1.Status). */
export interface Status {
  readonly kind?: 'Status';
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
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

export class ApiError extends OpkitError<ApiErrorCode> {
  override readonly name = 'ApiError';
  /** HTTP status, 0 when no response was received. */
  readonly status: number;
  readonly reason: string | undefined;
  readonly causes: readonly StatusCause[];
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
    return new ApiError(code, `${request}: ${text}`, {
      status,
      ...(s?.reason ? { reason: s.reason } : {}),
      ...(s?.details?.causes ? { causes: s.details.causes } : {}),
      ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
      request,
    });
  }
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

export function isApiError(err: unknown, code?: ApiErrorCode): err is ApiError {
  return err instanceof ApiError && (code === undefined || err.code === code);
}

export const isNotFound = (err: unknown): boolean => isApiError(err, 'NotFound');
export const isConflict = (err: unknown): boolean => isApiError(err, 'Conflict');
export const isAlreadyExists = (err: unknown): boolean => isApiError(err, 'AlreadyExists');
export const isGone = (err: unknown): boolean => isApiError(err, 'Gone');

/**
 * The apiserver's answer to a resourceVersion newer than any it has (after an etcd restore, or a watch cache behind a
 * newer apiserver): a 504 whose Status carries the cause `ResourceVersionTooLarge`. The way out is a fresh list with
 * no resourceVersion, as client-go's reflector does.
 */
export function isResourceVersionTooLarge(err: unknown): boolean {
  return err instanceof ApiError && err.causes.some((c) => c.reason === 'ResourceVersionTooLarge');
}
