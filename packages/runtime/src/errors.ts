/**
 * @module errors
 * `OpkitError`: the one base class of every error the runtime throws. Each has a string `code`, unique across the
 * runtime (each subclass narrows it to its own union, documented in docs/errors.md), and, when it wraps another
 * failure, that failure as `cause`. Callers catch `OpkitError` and switch on `code`, or test `instanceof` a subclass to
 * narrow the codes; they never need to list classes, and never read the message. The one exception is the caller's
 * own abort: a call whose `signal` aborted rejects with that signal's `reason` (an `AbortError` `DOMException` for a
 * plain `abort()`), as the platform's own APIs do, unless the call documents an `Aborted` code of its own
 * (`ApiError`'s, for requests).
 *
 * `UsageError` is the one class for a program's misuse of the API, whatever throws it: an argument or option out of
 * its range (`InvalidArgument`), or a call out of order (`AlreadyStarted`). Retrying cannot help; the message names
 * the argument or the call and says what to do.
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

/** Why a call was a misuse of the API. */
export type UsageErrorCode =
  /** An argument or option is outside what the call accepts; the message names it and the accepted values. */
  | 'InvalidArgument'
  /**
   * `start()` of a manager, controller or webhook server was called again, or a manager was given a runnable after
   * its start: start once, and register everything before.
   */
  | 'AlreadyStarted';

/** A misuse of the API: a bad argument or a call out of order. Fix the calling code; retrying cannot help. */
export class UsageError extends OpkitError<UsageErrorCode> {
  override readonly name = 'UsageError';
}

/** @internal The message of a thrown value, for a log line: an Error's message, anything else as a string. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
