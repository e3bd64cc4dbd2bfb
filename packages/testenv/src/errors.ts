/**
 * @module errors
 * The one error class of @opkit/testenv. Every failure carries a stable `code`, a message that says what to do,
 * and the underlying `cause` when there is one.
 */

/**
 * What failed. Switch on it, never on the message; the table of every code is docs/errors.md.
 */
export type TestenvErrorCode =
  /** No source could provide a required binary (control plane or helm): the message says every way to provide it. */
  | 'BinariesMissing'
  /** Building a component from Go modules failed: the message holds the tail of the go command's output. */
  | 'BuildFailed'
  /** Another process held the binary cache's lock for longer than the wait allows: the message names its pid. */
  | 'LockTimeout'
  /** A control-plane component exited before it was ready: the message names its exit code and the tail of its log. */
  | 'ComponentFailed'
  /** A component's port was taken by another process first: `start()` retries with fresh ports (3 tries in all). */
  | 'PortInUse'
  /** A component, or the whole control plane, was not ready within `startTimeoutMs`: the message holds log tails. */
  | 'StartTimeout'
  /** A request to the apiserver or etcd failed, or answered a status the call does not accept. */
  | 'ApiRequestFailed'
  /** The test PKI could not be made: `openssl` is missing or failed. */
  | 'CertificateFailed'
  /** An option, argument or environment variable has a value testenv cannot use: the message says which. */
  | 'InvalidOption'
  /** The environment is not running (not started yet, or stopped), or does not have the named component. */
  | 'NotRunning'
  /** A download failed (unreachable host, HTTP error, truncated, no digest published, retries exhausted). */
  | 'DownloadFailed'
  /** A downloaded file does not match its published digest, or two published digests disagree: nothing was cached. */
  | 'ChecksumMismatch'
  /** No space is left on the disk holding the cache: free some, or point `OPKIT_CACHE_DIR` at another disk. */
  | 'DiskFull'
  /** The cache directory is not writable: fix its permissions, or point `OPKIT_CACHE_DIR` at a writable directory. */
  | 'CacheNotWritable'
  /** `waitFor`'s check did not pass in time: the message names what was awaited and the last error the check threw. */
  | 'WaitTimeout'
  /** A `FaultProxy` could not listen on 127.0.0.1 (the cause is the socket's error). */
  | 'FaultProxyListenFailed'
  /**
   * The offline validator (`@opkit/testenv/cel`) failed in its own code (a Go panic, or its runtime exited): the
   * message holds Go's words; the next `loadValidator()` loads it again. Input it refuses is `InvalidOption`.
   */
  | 'ValidatorFailed'
  /**
   * `@opkit/testenv/chaos` was given something it cannot run: a scenario the apiserver refuses, an invariant that
   * throws, a project file it cannot read. The message names the file and the step; it is never reported as a
   * violation of the operator.
   */
  | 'ChaosInput';

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
