/**
 * @module multicluster/errors
 * The errors of fleets: why a member is not ready, why a provider's entry is not a cluster.
 */
import { OpkitError } from '../errors.ts';

/** What a fleet's errors are about. */
export type FleetErrorCode =
  /** The member did not answer, or its caches did not sync, in time. */
  | 'ClusterUnreachable'
  /** A controller of the member failed (the cause says why). */
  | 'ControllerFailed'
  /** The member's engagement failed otherwise: its `setup` threw (the cause says what). */
  | 'EngagementFailed'
  /** A provider's entry is not a cluster: a bad name, a kubeconfig that cannot be read, two entries for one name. */
  | 'InvalidCluster'
  /** The fleet runs, but its provider has not reported its clusters yet (the `fleet` readiness check). */
  | 'NotReported';

/** Why a member is not ready (in `fleet.status()` and the log). */
export class FleetError extends OpkitError<FleetErrorCode> {
  override readonly name = 'FleetError';
}
