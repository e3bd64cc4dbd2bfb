/**
 * @module errors
 * `OpkitError`: the one base class of every error the runtime throws. Each has a string `code` (each subclass narrows
 * it to its own union) and, when it wraps another failure, that failure as `cause`. Callers catch `OpkitError` and
 * switch on `code`, or test `instanceof` a subclass to narrow the codes; they never need to list classes.
 */
/**
 * The base class of every error the runtime throws: a `code` (narrowed by each subclass) and, when it wraps another
 * failure, that failure as `cause`.
 */
export class OpkitError<C extends string = string> extends Error {
  override readonly name: string = 'OpkitError';
  /** What went wrong, one of the subclass's codes; switch on it, never on the message. */
  readonly code: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}

/** True for any error the runtime throws. */
export function isOpkitError(err: unknown): err is OpkitError {
  return err instanceof OpkitError;
}
