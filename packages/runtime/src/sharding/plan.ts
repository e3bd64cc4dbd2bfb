/**
 * @module sharding/plan
 * A shard's state on one replica, as one value with a named phase, and the pure decision of its next step from that
 * phase, its fence as just listed and the members' view (the owner computed by ring.ts, and whether the fence's holder
 * is dead by this replica's own judgement). The coordinator (coordinator.ts) keeps one `ShardState` per shard and
 * carries out the step `nextStep` answers; nothing else decides.
 *
 * The phases: `free` (not ours), `acquiring` (our write of the fence under way), `starting` (the fence names us; the
 * host is listing the shard), `held` (reconciled here), `releasing` (draining, then freeing the fence), `freeing`
 * (writing "" into a fence that names us or a dead holder), `dropping` (stopping at once: the fence names someone
 * else). A shard counts as held here in `starting`, `held` and `releasing`.
 *
 * Guarantees of `nextStep` (each a row of plan.test.ts):
 * - a hand-off under way is never interrupted: in every phase but `free` and `held`, and before a list that started
 *   after our last fence write, the step is `none`;
 * - a held shard whose fence names another holder (or is gone) is dropped at once; one that is ours but owned by
 *   another member is released (drained first);
 * - a shard is acquired only by its owner, and only when its fence is free, already ours, or held by a member this
 *   replica judges dead itself (another member's report is not enough);
 * - a fence naming us that we do not hold is freed; a dead member's fence that another member owns is freed, so an
 *   owner that joined since (and cannot judge the holder dead yet) takes it at once.
 */

/** The phase of a shard on this replica; see the module comment. */
export type ShardPhase = 'free' | 'acquiring' | 'starting' | 'held' | 'releasing' | 'freeing' | 'dropping';

/** One shard on this replica: its phase, the hand-off under way, and when we last wrote its fence. */
export interface ShardState {
  phase: ShardPhase;
  /** The hand-off under way (in every phase but `free` and `held`). */
  task?: Promise<void> | undefined;
  /** Aborts an acquire under way (`acquiring`, `starting`). */
  abort?: AbortController | undefined;
  /** When our last write of the fence returned (monotonic): a list started before it cannot show it. */
  wroteAt: number;
  /**
   * A write naming this replica was sent since the fence was last seen or written free: the fence may name us (also
   * when the write's answer was lost, or its acquire cut short before the shard ran). A graceful stop frees it.
   */
  claimed: boolean;
}

/** What the coordinator does next for a shard. */
export type ShardStep = 'none' | 'drop' | 'release' | 'acquire' | 'free' | 'free-dead';

/** What `nextStep` decides from. */
export interface ShardSituation {
  readonly phase: ShardPhase;
  /** The fence's holder as listed: '' when free, undefined when there is no fence. */
  readonly holder: string | undefined;
  /** The shard's owner among the live members (ring.ts), undefined when none. */
  readonly owner: string | undefined;
  /** This replica's identity. */
  readonly me: string;
  /** Whether the holder is dead by this replica's own judgement (asked only when a step depends on it). */
  readonly holderDead: () => boolean;
  /** Whether the list the fence comes from started after our last write of it. */
  readonly listedSinceWrite: boolean;
}

/** Whether a shard in `phase` counts as held here (its fence names us and the host runs it, or is starting it). */
export function isHeld(phase: ShardPhase): boolean {
  return phase === 'starting' || phase === 'held' || phase === 'releasing';
}

/** The next step of a shard; see the module comment. */
export function nextStep(s: ShardSituation): ShardStep {
  if ((s.phase !== 'free' && s.phase !== 'held') || !s.listedSinceWrite) return 'none';
  const holder = s.holder ?? '';
  if (s.phase === 'held') {
    // the fence was changed or deleted while we held it (only a hand edit can): stop at once
    if (holder !== s.me) return 'drop';
    return s.owner !== s.me ? 'release' : 'none';
  }
  const foreign = holder !== '' && holder !== s.me;
  if (s.owner === s.me && (!foreign || s.holderDead())) return 'acquire';
  if (holder === s.me) return 'free';
  if (s.holder !== undefined && foreign && s.owner !== s.me && s.holderDead()) return 'free-dead';
  return 'none';
}
