/**
 * @module chaos/plan
 * Which trials a chaos run makes, from what the fault-free run of each scenario showed: for each step with writes,
 * a `crash` after every write (each write point), `conflict` and `throttle` on the first and the last write, and one
 * fault of each other kind (`stale`, `unobserved`, `pause`, `apiserver-restart`, `compaction`, `disconnect`,
 * `webhook-down` when the project has webhooks, and `member-away` and `member-down` when it runs with members, for
 * each step with writes in a member). The order is seeded: each kind's trials are shuffled by the seed and
 * taken breadth first (every step's first write point before any step's second: a crash right after a reconcile's
 * first write finds most intermediate states), then the kinds take turns in the order of `FAULT_KINDS`, the
 * platform's faults (slow: a restart or an outage each) at the end of the second round and one round in three after
 * it; so a run of more than two rounds tries each kind (`--faults` picks kinds). A trial's id (`samples:2:crash@1`, `samples:1:webhook-down`: scenario, step from 1, fault) names it for
 * a replay.
 *
 * Guarantees: the same seed and the same write counts give the same trials in the same order; ids are unique; no
 * `webhook-down` trial for a project without webhooks, no member fault without members.
 */
import {
  describeFault,
  FAULT_KINDS,
  type Fault,
  type FaultKind,
  MEMBER_FAULT_KINDS,
  PLATFORM_FAULT_KINDS,
  WEBHOOK_FAULT_KINDS,
} from './faults.ts';

/** One trial: a scenario run with one fault in one step. */
export interface PlannedTrial {
  readonly id: string;
  readonly scenario: string;
  readonly fault: Fault;
}

/** What the fault-free run of a scenario showed: its name and each step's count of writes (of them, in members). */
export interface WritePoints {
  readonly scenario: string;
  readonly writesPerStep: readonly number[];
  /** Each step's writes in member clusters (default: as `writesPerStep`): the member faults' write points. */
  readonly memberWritesPerStep?: readonly number[];
}

/** What the plan needs to know of the project. */
export interface PlanOptions {
  /**
   * Whether it has webhooks (configurations or conversions) the replicas serve (`ChaosSystem.webhookService`); without
   * (the default), no `webhook-down` trials.
   */
  readonly webhooks?: boolean;
  /** Whether it runs with member clusters (chaos/members); without (the default), no `member-away`, `member-down`. */
  readonly members?: boolean;
}

/** A trial's id: `scenario:step:fault`, the step counted from 1. */
export const trialId = (scenario: string, fault: Fault): string =>
  `${scenario}:${fault.step + 1}:${describeFault(fault)}`;

/** A seeded generator of floats in [0, 1) (mulberry32): the same seed, the same numbers, so a run can be replayed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

function faultsOf(kind: FaultKind, step: number, writes: number): Fault[] {
  switch (kind) {
    case 'crash':
      return Array.from({ length: writes }, (_, i) => ({ kind, step, k: i + 1 }));
    case 'conflict':
    case 'throttle':
      return [...new Set([1, writes])].map((k) => ({ kind, step, k }));
    default:
      return [{ kind, step }];
  }
}

/** The trials of `points` for the faults `kinds` (those `project` allows), in the seeded order of the module comment. */
export function planTrials(
  points: readonly WritePoints[],
  kinds: readonly FaultKind[],
  seed: number,
  project: PlanOptions = {},
): PlannedTrial[] {
  const random = seeded(seed);
  const planned = FAULT_KINDS.filter(
    (k) =>
      kinds.includes(k) &&
      (project.webhooks === true || !WEBHOOK_FAULT_KINDS.has(k)) &&
      (project.members === true || !MEMBER_FAULT_KINDS.has(k)),
  );
  const byKind = planned.map((kind) => {
    const trials = points.flatMap((p) =>
      (MEMBER_FAULT_KINDS.has(kind) ? (p.memberWritesPerStep ?? p.writesPerStep) : p.writesPerStep).flatMap(
        (writes, step) =>
          writes === 0
            ? []
            : faultsOf(kind, step, writes).map((fault) => ({
                id: trialId(p.scenario, fault),
                scenario: p.scenario,
                fault,
              })),
      ),
    );
    for (let i = trials.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [trials[i], trials[j]] = [trials[j] as PlannedTrial, trials[i] as PlannedTrial];
    }
    // breadth first: every step's first write before any step's second (a stable sort keeps the seeded order within)
    return { kind, trials: trials.sort((a, b) => (a.fault.k ?? 1) - (b.fault.k ?? 1)) };
  });
  const out: PlannedTrial[] = [];
  const taken = new Map<FaultKind, number>();
  for (let round = 0; byKind.some(({ kind, trials }) => trials.length > (taken.get(kind) ?? 0)); round++)
    for (const { kind, trials } of byKind) {
      if (PLATFORM_FAULT_KINDS.has(kind) && round % PLATFORM_EVERY !== 1) continue;
      const n = taken.get(kind) ?? 0;
      const t = trials[n];
      if (t !== undefined) out.push(t);
      taken.set(kind, n + 1);
    }
  return out;
}

/**
 * The platform's faults: each costs a restart or an outage (20–40 s), so they take a turn one round in three, from the
 * second round on (the first has the faults that find most bugs of an operator's own logic).
 */
const PLATFORM_EVERY = 3;

/** Parses a trial id back (`samples:2:crash@1`, `samples:1:webhook-down`); undefined when it is not one. */
export function parseTrialId(id: string): { scenario: string; fault: Fault } | undefined {
  const m = /^(.+):(\d+):([a-z]+(?:-[a-z]+)*)(?:@(\d+))?$/.exec(id);
  if (m === null) return undefined;
  const [, scenario, step, kind, k] = m;
  if (scenario === undefined || !FAULT_KINDS.includes(kind as FaultKind) || Number(step) < 1) return undefined;
  const fault: Fault = {
    kind: kind as FaultKind,
    step: Number(step) - 1,
    ...(k !== undefined ? { k: Number(k) } : {}),
  };
  return { scenario, fault };
}
