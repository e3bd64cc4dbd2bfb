/**
 * @module chaos/shard-report
 * The figures of a sharded chaos run (`summariseShards`), per fault kind, and its readable form (`shardMarkdown`). The
 * run passes when no invariant broke (the rebalance and stop goals are invariants: chaos/shard-faults checks them per
 * trial); it is complete when every kind ran at least `SHARD_MIN_TRIALS` trials.
 */
import type { ShardFilter } from './fences.ts';
import { type Handoffs, TIMINGS } from './fences.ts';
import { RESUME_STOP_GOAL_SECONDS } from './pause.ts';
import type { RunViolation } from './report.ts';
import { REBALANCE_GOAL_SECONDS, STOP_GOAL_SECONDS } from './shard-faults.ts';
import type { ShardTrialResult } from './sharded.ts';

export const SHARD_MIN_TRIALS = 10;

/** Median and maximum, in seconds (null when no trial measured it). */
export interface Spread {
  readonly p50: number | null;
  readonly max: number | null;
}

/** One fault kind's figures. */
export interface ShardKindFigures {
  readonly trials: number;
  readonly violations: number;
  readonly rebalance: Spread;
  readonly stop: Spread;
  readonly rejoin: Spread;
  /** kill: the kill → its restarted process a member again. */
  readonly member: Spread;
  readonly join: Spread;
  readonly leave: Spread;
  /** pause: SIGCONT → the paused replica stopped every bucket. */
  readonly resumeStop: Spread;
  readonly recovery: Spread;
  readonly trial: Spread;
  readonly handoffs: Handoffs;
  readonly writesChecked: number;
}

export interface ShardReport {
  readonly seed: number;
  /** How the replicas selected their shards (`--sharding-filter`); absent in reports from before filters: labels. */
  readonly filter?: ShardFilter;
  readonly trials: number;
  readonly kinds: Record<string, ShardKindFigures>;
  readonly violations: RunViolation[];
  readonly results: ShardTrialResult[];
  /** Every kind ran at least `SHARD_MIN_TRIALS` trials. */
  readonly complete: boolean;
  readonly passed: boolean;
}

const round = (n: number) => Math.round(n * 100) / 100;

export function spread(values: readonly (number | undefined)[]): Spread {
  const v = values.filter((x): x is number => x !== undefined).sort((a, b) => a - b);
  if (v.length === 0) return { p50: null, max: null };
  return { p50: round(v[Math.ceil(v.length / 2) - 1] as number), max: round(v[v.length - 1] as number) };
}

function figuresOf(results: readonly ShardTrialResult[], violations: readonly RunViolation[], kind: string) {
  const mine = results.filter((r) => r.kind === kind);
  const sum = (f: (r: ShardTrialResult) => number) => mine.reduce((n, r) => n + f(r), 0);
  return {
    trials: mine.length,
    violations: violations.filter((v) => v.kind === kind).length,
    rebalance: spread(mine.map((r) => r.rebalanceSeconds)),
    stop: spread(mine.map((r) => r.stopSeconds)),
    rejoin: spread(mine.map((r) => r.rejoinSeconds)),
    member: spread(mine.map((r) => r.memberSeconds)),
    join: spread(mine.map((r) => r.joinSeconds)),
    leave: spread(mine.map((r) => r.leaveSeconds)),
    resumeStop: spread(mine.map((r) => r.resumeStopSeconds)),
    recovery: spread(mine.map((r) => r.recoverySeconds)),
    trial: spread(mine.map((r) => r.trialSeconds)),
    handoffs: {
      acquired: sum((r) => r.handoffs.acquired),
      released: sum((r) => r.handoffs.released),
      freed: sum((r) => r.handoffs.freed),
      taken: sum((r) => r.handoffs.taken),
    },
    writesChecked: sum((r) => r.writesChecked),
  };
}

/** The figures of the run: per kind in `kinds` (each listed, even with no trial), and the verdict. */
export function summariseShards(
  seed: number,
  kinds: readonly string[],
  results: readonly ShardTrialResult[],
  violations: readonly RunViolation[],
  filter: ShardFilter = 'labels',
): ShardReport {
  const perKind: Record<string, ShardKindFigures> = {};
  for (const k of kinds) perKind[k] = figuresOf(results, violations, k);
  return {
    seed,
    filter,
    trials: results.length,
    kinds: perKind,
    violations: [...violations],
    results: [...results],
    complete: kinds.every((k) => (perKind[k]?.trials ?? 0) >= SHARD_MIN_TRIALS),
    passed: violations.length === 0,
  };
}

const s = (x: Spread) => (x.max === null ? '—' : `p50 ${x.p50} s, max ${x.max} s`);

function kindLine(kind: string, f: ShardKindFigures): string {
  const parts = [`${f.trials} trials`, `${f.violations} violations`];
  if (f.rebalance.max !== null) parts.push(`rebalance ${s(f.rebalance)} (goal ≤ ${REBALANCE_GOAL_SECONDS} s)`);
  if (f.stop.max !== null)
    parts.push(
      `cut-off replica stopped ${s(f.stop)} (goal: the renew deadline, ${TIMINGS.renewDeadlineSeconds} s, + ${STOP_GOAL_SECONDS - TIMINGS.renewDeadlineSeconds} s for the polling)`,
    );
  if (f.join.max !== null) parts.push(`join ${s(f.join)}`);
  if (f.leave.max !== null) parts.push(`leave ${s(f.leave)}`);
  if (f.resumeStop.max !== null)
    parts.push(
      `paused replica stopped its buckets after SIGCONT ${s(f.resumeStop)} (goal ≤ ${RESUME_STOP_GOAL_SECONDS} s)`,
    );
  if (f.member.max !== null) parts.push(`restarted process a member ${s(f.member)}`);
  if (f.rejoin.max !== null) parts.push(`rejoin (holds a bucket again) ${s(f.rejoin)}`);
  parts.push(`recovery ${s(f.recovery)}`, `trial ${s(f.trial)}`);
  parts.push(
    `fences acquired ${f.handoffs.acquired}, released ${f.handoffs.released}, freed ${f.handoffs.freed}, taken ${f.handoffs.taken}; writes checked against the fences ${f.writesChecked}`,
  );
  return `- ${kind}: ${parts.join('; ')}.`;
}

/** The readable report. */
export function shardMarkdown(r: ShardReport): string {
  const lines = [
    `# Sharded chaos report (seed ${r.seed}) — ${r.passed ? 'PASSED' : 'FAILED'}${r.complete ? '' : ` (fewer than ${SHARD_MIN_TRIALS} trials of some kind)`}`,
    '',
    `Trials: ${r.trials}. Violations: ${r.violations.length}. Three replicas with --sharding --sharding-filter=${r.filter ?? 'labels'} (a fourth joins and leaves in replica-add), ${TIMINGS.leaseSeconds} s member leases; every write to a pod, an AppService or an Event about one checked in the audit log against the fence Lease of its bucket.`,
    '',
    ...Object.entries(r.kinds).map(([k, f]) => kindLine(k, f)),
  ];
  if (r.violations.length) {
    lines.push('', 'Violations:');
    for (const v of r.violations.slice(0, 50)) lines.push(`- trial ${v.trial} (${v.kind}) ${v.invariant}: ${v.detail}`);
    if (r.violations.length > 50) lines.push(`- … and ${r.violations.length - 50} more (see --json)`);
  }
  return lines.join('\n');
}
