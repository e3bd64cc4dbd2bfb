/**
 * @module chaos/shard-run
 * The sharded chaos, from a seed: a control plane, three operator replicas with `--sharding` (each through its own
 * fault proxy, serving the webhooks behind one Service), a dozen AppServices spread over the buckets so every replica
 * owns some, then `trials` trials of each sharded fault kind (chaos/sharded; interleaved, so kinds meet each other's
 * after-effects). Returns the figures (chaos/shard-report); `passed` says whether every invariant held.
 */

import { chaosCluster } from './cluster.ts';
import type { ShardFilter } from './fences.ts';
import { Monitor } from './monitor.ts';
import type { RunViolation } from './report.ts';
import { Rng } from './rng.ts';
import { type ShardReport, summariseShards } from './shard-report.ts';
import { SHARD_FAULT_KINDS, type ShardFaultKind, type ShardTrialResult, ShardTrialRunner } from './sharded.ts';

export interface ShardChaosOptions {
  readonly trials: number;
  readonly seed: number;
  readonly kinds?: readonly ShardFaultKind[];
  /** AppServices to start with (default 12; more are added until every replica owns one). */
  readonly apps?: number;
  /** How a `replica-cutoff` cut heals (default `reset`; see chaos/shard-faults). */
  readonly heal?: 'reset' | 'pass';
  /** How the replicas select their shards (default `labels`; `server`: the apiserver's shard selectors). */
  readonly filter?: ShardFilter;
  readonly log?: (line: string) => void;
}

/** The figures of one trial, for the log. */
export function trialLine(n: number, r: ShardTrialResult): string {
  const f = (label: string, x: number | undefined) => (x === undefined ? '' : `, ${label} ${x.toFixed(1)} s`);
  const figures = [
    f('rebalanced', r.rebalanceSeconds),
    r.rebalancedTo ? ` (to ${r.rebalancedTo})` : '',
    f('restarted process a member after', r.memberSeconds),
    f('stopped', r.stopSeconds),
    f('stopped after SIGCONT', r.resumeStopSeconds),
    f('joined', r.joinSeconds),
    f('left', r.leaveSeconds),
    f('rejoined', r.rejoinSeconds),
  ].join('');
  const h = r.handoffs;
  const broke = r.violations.length
    ? ` — ${r.violations.length} VIOLATIONS: ${r.violations.map((v) => `${v.invariant}: ${v.detail}`).join('; ')}`
    : '';
  return `trial ${n} ${r.kind} (${r.action}): fault ${r.faultSeconds.toFixed(1)} s${figures}, recovered in ${r.recoverySeconds.toFixed(1)} s, trial ${r.trialSeconds.toFixed(1)} s; fences +${h.acquired}/-${h.released} (freed ${h.freed}, taken ${h.taken}), ${r.writesChecked} writes checked; ring: ${r.ring}${r.slow ? ` (slow: ${r.slow})` : ''}${broke}`;
}

export async function runShardedChaos(o: ShardChaosOptions): Promise<ShardReport> {
  const log = o.log ?? (() => {});
  const rng = new Rng(o.seed);
  const kinds = o.kinds ?? SHARD_FAULT_KINDS;
  log('control plane + three sharded operator replicas behind fault proxies, serving the webhooks behind a Service…');
  const c = await chaosCluster({ sharded: true, filter: o.filter ?? 'labels' });
  const ctl = new AbortController();
  try {
    const m = new Monitor(c.admin, ctl.signal);
    await m.synced();
    const runner = new ShardTrialRunner(c, m, rng, o.heal);
    const violations: RunViolation[] = [];
    const first = await runner.prepare(o.apps ?? 12);
    violations.push(...first.map((v) => ({ ...v, seed: o.seed, trial: 0, kind: 'first convergence' })));
    log(`first convergence: ${first.length} violations; AppServices by replica: ${await runner.owners()}`);
    for (const v of first) log(`  ${v.invariant}: ${v.detail}`);
    const results: ShardTrialResult[] = [];
    for (let round = 0; round < o.trials; round++)
      for (const kind of kinds) {
        let r: ShardTrialResult;
        try {
          r = await runner.run(kind);
        } catch (err) {
          // the harness itself failed: a violation, and the run goes on
          const detail = `the trial could not run: ${(err as Error).stack ?? (err as Error).message}`;
          r = {
            kind,
            action: 'none',
            faultSeconds: 0,
            recoverySeconds: 0,
            trialSeconds: 0,
            handoffs: { acquired: 0, released: 0, freed: 0, taken: 0 },
            writesChecked: 0,
            ring: '',
            violations: [{ invariant: 'harness', detail }],
          };
        }
        results.push(r);
        violations.push(...r.violations.map((v) => ({ ...v, seed: o.seed, trial: results.length, kind })));
        log(trialLine(results.length, r));
      }
    return summariseShards(o.seed, kinds, results, violations, o.filter ?? 'labels');
  } finally {
    ctl.abort();
    await c.stop();
  }
}
