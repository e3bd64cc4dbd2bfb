/**
 * @module errors
 * The one error class of @opkit/testenv. Every failure carries a stable `code`, a message that says what to do,
 * and the underlying `cause` when there is one.
 */

/**
 * What failed: finding, downloading or building the binaries (`BinariesMissing`, `DownloadFailed`, `ChecksumMismatch`,
 * `BuildFailed`, `DiskFull`, `CacheNotWritable`, `LockTimeout`), starting or running the control plane
 * (`ComponentFailed`, `StartTimeout`, `CertificateFailed`, `NotRunning`), a request (`ApiRequestFailed`), or an option
 * (`InvalidOption`).
 */
export type TestenvErrorCode =
  | 'BinariesMissing'
  | 'BuildFailed'
  | 'LockTimeout'
  | 'ComponentFailed'
  | 'StartTimeout'
  | 'ApiRequestFailed'
  | 'CertificateFailed'
  | 'InvalidOption'
  | 'NotRunning'
  | 'DownloadFailed'
  | 'ChecksumMismatch'
  | 'DiskFull'
  | 'CacheNotWritable';

/**
 * Every failure of @opkit/testenv: a stable `code`, a message that says what to do, and the underlying `cause` when
 * there is one.
 */
export class TestenvError extends Error {
  override readonly name = 'TestenvError';
  /** What failed; switch on it, never on the message. */
  readonly code: TestenvErrorCode;

  constructor(code: TestenvErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** True when `err` is a TestenvError, optionally of the given code. */
export function isTestenvError(err: unknown, code?: TestenvErrorCode): err is TestenvError {
  return err instanceof TestenvError && (code === undefined || err.code === code);
}
