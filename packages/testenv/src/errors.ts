/**
 * @module errors
 * The one error class of @opkit/testenv. Every failure carries a stable `code`, a message that says what to do,
 * and the underlying `cause` when there is one.
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

export class TestenvError extends Error {
  override readonly name = 'TestenvError';
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
