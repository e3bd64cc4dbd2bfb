/**
 * @module manager/fence
 * What must hold for a replica to act: the leader Lease (leader election) or the member Lease (sharding), fresh by the
 * monotonic clock at the moment it is asked. The manager hands it to its controllers, which ask it before each
 * reconcile, right before each request a reconcile sends and before each Event they write, so a replica paused past
 * its Lease (SIGSTOP, a long GC, a VM migration) sends nothing once it runs again, whichever of its timers fires
 * first: an Event recorded while it led and written after is refused too. A controller that runs on every replica
 * (`needLeaderElection: false`, without sharding) has no fence, and its Events go through an unfenced recorder.
 * Without leader election or sharding there is no fence: every replica acts.
 */
import type { LeaderElector } from './leader.ts';

/** The fence of a replica: throws (an `AbortError`) when it may not act now; undefined when nothing fences it. */
export function replicaFence(o: {
  /** With sharding: the coordinator, whose `check` asks the member Lease. */
  readonly sharding: { check(): void } | undefined;
  /** Whether leader election is on. */
  readonly leaderElection: boolean;
  /** The elector, once the campaign started. */
  readonly elector: () => LeaderElector | undefined;
}): (() => void) | undefined {
  const { sharding } = o;
  if (sharding) return () => sharding.check();
  if (!o.leaderElection) return undefined;
  return () => {
    const elector = o.elector();
    if (!elector) throw new DOMException('leader election: not started', 'AbortError');
    elector.check();
  };
}
