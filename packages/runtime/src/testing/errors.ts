/**
 * @module testing/errors
 * `TestingError`: what the test helpers throw when a wait runs out of time, a test manager is refused or fails, or a
 * conversion round trip changes an object. A module of its own so that `@opkit/runtime/testing` and
 * `@opkit/runtime/testing/roundtrip` share the class without either loading the other.
 */
import { OpkitError } from '../errors.ts';

/** Why a test helper failed. */
export type TestingErrorCode =
  /** The apiserver refused the test manager's ServiceAccount: add the missing permission to `permissions`. */
  | 'TestManagerForbidden'
  /** The test manager stopped with an error, its `cause`. */
  | 'ManagerFailed'
  /** A step of the test manager's `stop()` failed (closing a client); `cause` is the error, or an AggregateError. */
  | 'TestManagerStopFailed'
  /** `eventually` ran out of time; the last error its function threw, if any, is the `cause`. */
  | 'EventuallyTimeout'
  /**
   * `startTestManager({ webhooks })` on a cluster without `installWebhooks`, whose apiserver cannot call a server in
   * the test's process: use `@opkit/testenv`'s `start()`.
   */
  | 'WebhooksUnsupported'
  /**
   * A cluster's `installWebhooks` registered the webhooks without calling `serve` (so nothing answers them): they are
   * removed again; fix the cluster's `installWebhooks`.
   */
  | 'WebhooksNotServed'
  /** A conversion round trip changed the object, or a conversion threw: the message says which, with fast-check's seed. */
  | 'RoundTripFailed';

/** A failed wait, a failed test manager or a failed round trip; `code` says which. */
export class TestingError extends OpkitError<TestingErrorCode> {
  override readonly name = 'TestingError';
}
