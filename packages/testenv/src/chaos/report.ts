/**
 * @module chaos/report
 * A chaos run's report, for people (`formatReport`) and for tools (`reportJson`): each violation with its trial's
 * id, fault and step, the operator's writes in that step up to the fault, and the one command that replays exactly
 * that trial; then what ran, what was left out for the budget, and the seed.
 *
 * Guarantees: the text names every violation of the report; the JSON holds the same, with no function or cycle in it.
 */
import { describeFault } from './faults.ts';
import type { ChaosReport } from './run.ts';
import type { TrialResult, Violation } from './trial.ts';

/** One violation, where it was found, and how to see it again. */
export interface ReportedViolation extends Violation {
  /** The id of the run it was seen in. */
  readonly trial: string;
  /** The fault and its step (`crash@1 in step 2`); none in a fault-free run. */
  readonly fault?: string;
  /** The step after which it was seen, in words. */
  readonly stepDescription?: string;
  /** The operator's writes in that step, in order. */
  readonly writes: readonly string[];
  /** The command that runs that trial again. */
  readonly replay: string;
}

/** The command that runs that trial again (after its scenario's fault-free run), or only a fault-free run. */
export function replayCommand(
  r: TrialResult,
  report: Pick<ChaosReport, 'seed' | 'sharded' | 'members'>,
  command: string,
): string {
  const members = report.members > 0 ? ` --members ${report.members}` : '';
  return `${command} --trial '${r.id}' --seed ${report.seed}${report.sharded ? ' --sharding' : ''}${members}`;
}

/** Every violation of the report, with where and how to replay. */
export function violations(report: ChaosReport, command = 'npx opkit chaos'): ReportedViolation[] {
  return [...report.faultFree, ...report.trials].flatMap((r) =>
    r.violations.map((v) => {
      const step = v.step === undefined ? undefined : r.steps[v.step];
      return {
        ...v,
        trial: r.id,
        ...(r.fault ? { fault: `${describeFault(r.fault)} in step ${r.fault.step + 1}` } : {}),
        ...(step ? { stepDescription: step.description } : {}),
        writes: step?.writes ?? [],
        replay: replayCommand(r, report, command),
      };
    }),
  );
}

/** Consecutive equal writes as one entry with their count. */
function repeats(writes: readonly string[]): [string, number][] {
  const out: [string, number][] = [];
  for (const w of writes) {
    const last = out.at(-1);
    if (last?.[0] === w) last[1]++;
    else out.push([w, 1]);
  }
  return out;
}

/** The report as text (see the module comment). */
export function formatReport(report: ChaosReport, command = 'npx opkit chaos'): string {
  const found = violations(report, command);
  const lines: string[] = [];
  for (const v of found) {
    const where = v.step === undefined ? 'over the whole run' : `after step ${v.step + 1} (${v.stepDescription})`;
    lines.push(`✗ ${v.invariant} — ${v.trial}${v.fault ? `, fault ${v.fault}` : ', no fault'}, ${where}`);
    lines.push(...v.message.split('\n').map((l) => `    ${l}`));
    if (v.writes.length > 0) {
      const runs = repeats(v.writes);
      lines.push(`    the operator's writes in that step (${v.writes.length}):`);
      lines.push(...runs.slice(0, 12).map(([w, n], i) => `      ${i + 1}. ${w}${n > 1 ? ` (×${n} in a row)` : ''}`));
      if (runs.length > 12) lines.push(`      … ${runs.length - 12} more`);
    }
    lines.push(`    replay: ${v.replay}`, '');
  }
  const runs = report.faultFree.length + report.trials.length;
  const fired = report.trials.filter((t) => t.fired).length;
  lines.push(
    `${found.length === 0 ? '✓ no violation' : `✗ ${found.length} ${found.length === 1 ? 'violation' : 'violations'}`}: ` +
      `${report.faultFree.length} fault-free ${report.faultFree.length === 1 ? 'run' : 'runs'} and ${report.trials.length} of ${report.planned} trials ` +
      `(${fired} faults fired) in ${(report.durationMs / 1000).toFixed(0)} s, seed ${report.seed}, faults ${report.faults.join(',')}` +
      (report.leftOut > 0 ? `; ${report.leftOut} trials left out (the budget or --trials ran out)` : ''),
  );
  if (report.noTrials.length > 0)
    lines.push(`  no trials for ${report.noTrials.join(', ')}: the fault-free run already broke an invariant`);
  if (runs === 0) lines.push('  nothing ran: no scenario (add samples under config/samples, or test/chaos/*.ts)');
  return `${lines.join('\n')}\n`;
}

/** The report as JSON: the counts, the seed, every violation, and each run's id, fault and duration. */
export function reportJson(report: ChaosReport, command = 'npx opkit chaos'): string {
  const run = (r: TrialResult) => ({
    id: r.id,
    namespace: r.namespace,
    fault: r.fault ? describeFault(r.fault) : null,
    fired: r.fired,
    violations: r.violations.length,
    durationMs: r.durationMs,
    steps: r.steps.map((s) => ({ description: s.description, writes: s.writes })),
  });
  return `${JSON.stringify(
    {
      seed: report.seed,
      sharded: report.sharded,
      faults: report.faults,
      planned: report.planned,
      leftOut: report.leftOut,
      noTrials: report.noTrials,
      durationMs: report.durationMs,
      violations: violations(report, command),
      faultFree: report.faultFree.map(run),
      trials: report.trials.map(run),
    },
    null,
    2,
  )}\n`;
}
