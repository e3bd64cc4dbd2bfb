/**
 * @module manager/errors
 * `ManagerError`: why `Manager.start()` rejected (and `run()` exited 1), or why a built-in readiness check fails
 * (`NotReady`). Each code names one cause; the message says what to do about it. A controller whose informers never synced rejects `start()` with the `CacheError`
 * `CacheSyncTimeout` itself (cache/cache.ts), and a misuse of the manager (`start()` twice, `add` after it) is a
 * `UsageError`.
 */

import { OpkitError } from '../errors.ts';

/** What made `Manager.start()` reject, or a built-in readiness check fail (`NotReady`). */
export type ManagerErrorCode =
  /** The apiserver could not be reached within `apiReachableTimeoutMs` at start: check the kubeconfig and network. */
  | 'ApiUnreachable'
  /** The Lease could not be renewed within `renewDeadlineMs`: the manager stopped at once, so a standby can lead. */
  | 'LeaderElectionLost'
  /** A watched resource is not served by the apiserver (a CRD not installed): the message names it. */
  | 'ResourceNotServed'
  /** A controller or other runnable threw or rejected while running (its error is the `cause`). */
  | 'RunnableFailed'
  /** The metrics server cannot listen on its bind address (e.g. the port is taken) or cannot be set up. */
  | 'MetricsBindFailed'
  /** The health probe server (`/healthz`, `/readyz`) cannot listen on its bind address (e.g. the port is taken). */
  | 'ProbeBindFailed'
  /** The metrics serving certificate cannot be read, or its key is not the certificate's: the message names the file. */
  | 'MetricsCertificateUnreadable'
  /**
   * A built-in readiness check fails (the manager is stopping, an informer has not synced, or a cache was found stale
   * and its watch has not caught up since): `/readyz` shows why.
   */
  | 'NotReady'
  /** A step of a graceful stop failed (the error, or an `AggregateError` of several, is the `cause`). */
  | 'StopFailed';

/**
 * Why `start()` rejected (`run()` prints its message and exits 1), or why a built-in readiness check fails; `code` says
 * which.
 */
export class ManagerError extends OpkitError<ManagerErrorCode> {
  override readonly name = 'ManagerError';
}
