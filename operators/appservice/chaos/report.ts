/**
 * @module chaos/report
 * The figures of a chaos run: built from what one run observed (`summarise`), combined across runs (`mergeReports`:
 * e.g. the fault kinds split over concurrent runs, each on its own control plane), judged against the goals (`passed`)
 * and printed (`chaosMarkdown`). Merging keeps every trial, so percentiles and maxima are those of all trials together;
 * a permission counts as used when any run used it.
 */
import type { TrialResult } from './faults.ts';
import type { FuzzOutcome } from './fuzz.ts';
import type { Violation } from './monitor.ts';
import { RESUME_STOP_GOAL_SECONDS } from './pause.ts';
import type { SecurityReport } from './security.ts';
import type { StartupCheck } from './startup.ts';

export type RunViolation = Violation & { readonly seed: number; readonly trial: number; readonly kind: string };

/** What one run (or several) observed, before the figures are computed. */
export interface Observed {
  /** One per run: a merged report lists the seed of each. */
  readonly seeds: number[];
  readonly results: TrialResult[];
  readonly violations: RunViolation[];
  readonly fuzzCrashes: number;
  readonly fuzzOutcomes: Record<string, number>;
  readonly fuzzRefusedUnnamed: FuzzOutcome[];
  readonly fuzzNotReconciled: FuzzOutcome[];
  readonly startup: StartupCheck[];
  readonly security: SecurityReport;
}

/** The figures: what was observed, and what follows from it. */
export interface ChaosReport extends Observed {
  readonly trials: number;
  readonly faults: Record<string, number>;
  readonly recoveryP50Seconds: number;
  readonly recoveryP99Seconds: number;
  /** Recoveries over 5 s, and how many of them were only waiting on the nodes then (see `TrialResult`). */
  readonly slowRecoveries: { readonly total: number; readonly waitingOnNodes: number };
  /** kill: SIGKILL of the leader → the standby holds the Lease. */
  readonly failoverMaxSeconds: number | null;
  /** leader-cutoff: the cut → the standby holds the Lease (the lease must expire first: up to 15 s + a retry). */
  readonly cutoffFailoverMaxSeconds: number | null;
  readonly handoverMaxSeconds: number | null;
  /** Any trial in which a replica took the Lease: the Lease taken → its controllers' workers started. */
  readonly takeoverMaxSeconds: number | null;
  readonly leaderStopMaxSeconds: number | null;
  readonly watchHangDetectionMaxSeconds: number | null;
  /** rolling-update: the writes that needed the webhooks while a replica stopped gracefully, and those that failed. */
  readonly rollingWrites: { readonly trials: number; readonly sent: number; readonly failed: number };
  /** rolling-update: SIGTERM → the replica exited. */
  readonly rollingStopMaxSeconds: number | null;
  /** pause: the leader stopped (SIGSTOP) → the standby holds the Lease. */
  readonly pauseFailoverMaxSeconds: number | null;
  /** pause: SIGCONT → the resumed leader stopped leading (goal: chaos/pause `RESUME_STOP_GOAL_SECONDS`). */
  readonly pauseResumeStopMaxSeconds: number | null;
  readonly fuzzCases: number;
  readonly passed: boolean;
}

export const GOALS = {
  failoverSeconds: 17,
  handoverSeconds: 3,
  takeoverSeconds: 1,
  watchHangDetectionSeconds: 60,
} as const;

const quantile = (sorted: readonly number[], q: number) =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)] as number);
const round = (n: number) => Math.round(n * 1000) / 1000;
const max = (xs: readonly (number | undefined)[]) => {
  const v = xs.filter((x): x is number => x !== undefined);
  return v.length ? round(Math.max(...v)) : null;
};
const of = (results: readonly TrialResult[], kind: string) => results.filter((r) => r.kind === kind);

/** The figures and the verdict. */
export function summarise(o: Observed): ChaosReport {
  const { results } = o;
  const recovery = results.map((r) => r.recoverySeconds).sort((a, b) => a - b);
  const faults: Record<string, number> = {};
  for (const r of results) faults[r.kind] = (faults[r.kind] ?? 0) + 1;
  const report = {
    seeds: o.seeds,
    trials: results.length,
    faults,
    violations: o.violations,
    recoveryP50Seconds: round(quantile(recovery, 0.5)),
    recoveryP99Seconds: round(quantile(recovery, 0.99)),
    slowRecoveries: {
      total: results.filter((r) => r.slow !== undefined).length,
      waitingOnNodes: results.filter((r) => r.waitingOnNodes).length,
    },
    failoverMaxSeconds: max(of(results, 'kill').map((r) => r.failoverSeconds)),
    cutoffFailoverMaxSeconds: max(of(results, 'leader-cutoff').map((r) => r.failoverSeconds)),
    handoverMaxSeconds: max(results.map((r) => r.handoverSeconds)),
    takeoverMaxSeconds: max(results.map((r) => r.takeoverSeconds)),
    leaderStopMaxSeconds: max(of(results, 'leader-cutoff').map((r) => r.detectionSeconds)),
    watchHangDetectionMaxSeconds: max(of(results, 'watch-hang').map((r) => r.detectionSeconds)),
    rollingWrites: {
      trials: of(results, 'rolling-update').length,
      sent: results.reduce((n, r) => n + (r.webhookWrites?.sent ?? 0), 0),
      failed: results.reduce((n, r) => n + (r.webhookWrites?.failed ?? 0), 0),
    },
    rollingStopMaxSeconds: max(of(results, 'rolling-update').map((r) => r.stopSeconds)),
    pauseFailoverMaxSeconds: max(of(results, 'pause').map((r) => r.failoverSeconds)),
    pauseResumeStopMaxSeconds: max(of(results, 'pause').map((r) => r.resumeStopSeconds)),
    fuzzCases: Object.values(o.fuzzOutcomes).reduce((a, b) => a + b, 0),
    fuzzCrashes: o.fuzzCrashes,
    fuzzOutcomes: o.fuzzOutcomes,
    fuzzRefusedUnnamed: o.fuzzRefusedUnnamed,
    fuzzNotReconciled: o.fuzzNotReconciled,
    startup: o.startup,
    security: o.security,
    results,
  };
  const s = o.security;
  const passed =
    o.violations.length === 0 &&
    o.fuzzCrashes === 0 &&
    o.fuzzRefusedUnnamed.length === 0 &&
    o.fuzzNotReconciled.length === 0 &&
    o.startup.every((c) => c.ok) &&
    s.forbidden === 0 &&
    s.unusedPermissions.length === 0 &&
    s.restrictedAdmission.admitted &&
    s.secretsLogged.length === 0 &&
    s.npmAudit.status !== 'findings' &&
    (report.failoverMaxSeconds ?? 0) <= GOALS.failoverSeconds &&
    (report.handoverMaxSeconds ?? 0) <= GOALS.handoverSeconds &&
    (report.takeoverMaxSeconds ?? 0) <= GOALS.takeoverSeconds &&
    (report.watchHangDetectionMaxSeconds ?? 0) <= GOALS.watchHangDetectionSeconds;
  return { ...report, passed };
}

const AUDIT_RANK = { clean: 0, unavailable: 1, findings: 2 } as const;

/** The security findings of several runs: counts add up, a permission is unused only if no run used it. */
function mergeSecurity(all: readonly SecurityReport[]): SecurityReport {
  const [first, ...rest] = all;
  if (!first) throw new Error('mergeSecurity: no reports');
  const unused = rest.reduce((acc, s) => acc.filter((p) => s.unusedPermissions.includes(p)), first.unusedPermissions);
  const refused = all.find((s) => !s.restrictedAdmission.admitted);
  const audit = all.reduce(
    (worst, s) => (AUDIT_RANK[s.npmAudit.status] > AUDIT_RANK[worst.status] ? s.npmAudit : worst),
    first.npmAudit,
  );
  return {
    forbidden: all.reduce((n, s) => n + s.forbidden, 0),
    forbiddenRequests: [...new Set(all.flatMap((s) => s.forbiddenRequests))],
    forbiddenWhileApiserverRestarted: all.reduce((n, s) => n + s.forbiddenWhileApiserverRestarted, 0),
    unusedPermissions: unused,
    restrictedAdmission: (refused ?? first).restrictedAdmission,
    secretsLogged: [...new Set(all.flatMap((s) => s.secretsLogged))],
    npmAudit: audit,
  };
}

/** One report over several runs: every trial, fuzz body, start-up check and security finding of each. */
export function mergeReports(reports: readonly ChaosReport[]): ChaosReport {
  if (reports.length === 0) throw new Error('mergeReports: no reports to merge');
  const fuzzOutcomes: Record<string, number> = {};
  for (const r of reports)
    for (const [k, n] of Object.entries(r.fuzzOutcomes)) fuzzOutcomes[k] = (fuzzOutcomes[k] ?? 0) + n;
  return summarise({
    seeds: reports.flatMap((r) => r.seeds),
    results: reports.flatMap((r) => r.results),
    violations: reports.flatMap((r) => r.violations),
    fuzzCrashes: reports.reduce((n, r) => n + r.fuzzCrashes, 0),
    fuzzOutcomes,
    fuzzRefusedUnnamed: reports.flatMap((r) => r.fuzzRefusedUnnamed),
    fuzzNotReconciled: reports.flatMap((r) => r.fuzzNotReconciled),
    startup: reports.flatMap((r) => r.startup),
    security: mergeSecurity(reports.map((r) => r.security)),
  });
}

/** The readable report. */
export function chaosMarkdown(r: ChaosReport): string {
  const multi = r.seeds.length > 1;
  const lines = [
    `# Chaos report (seed${multi ? 's' : ''} ${r.seeds.join(', ')}) — ${r.passed ? 'PASSED' : 'FAILED'}`,
    '',
    `Trials: ${r.trials} (${Object.entries(r.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}). Violations: ${r.violations.length}.`,
    `Recovery (fault lifted → settled): p50 ${r.recoveryP50Seconds} s, p99 ${r.recoveryP99Seconds} s; over 5 s: ${r.slowRecoveries.total}, of which ${r.slowRecoveries.waitingOnNodes} only waiting on the nodes by then (pods not yet scheduled or Ready, the status already saying so).`,
    `Failover (leader lost → standby leads): max ${r.failoverMaxSeconds ?? '—'} s (goal ≤ ${GOALS.failoverSeconds}). Handover (SIGTERM → successor leads): max ${r.handoverMaxSeconds ?? '—'} s (goal ≤ ${GOALS.handoverSeconds}). Takeover (the Lease taken → the controllers' workers started, from caches kept warm while standing by): max ${r.takeoverMaxSeconds ?? '—'} s (goal ≤ ${GOALS.takeoverSeconds}).`,
    `Cut-off leader stopped after: max ${r.leaderStopMaxSeconds ?? '—'} s (the lease is 15 s); standby leading after: max ${r.cutoffFailoverMaxSeconds ?? '—'} s. Silent watch hang detected after: max ${r.watchHangDetectionMaxSeconds ?? '—'} s (goal ≤ ${GOALS.watchHangDetectionSeconds}).`,
    `Rolling update (a replica stopped gracefully while writes need its webhooks): ${r.rollingWrites.trials} trials, ${r.rollingWrites.sent} writes, ${r.rollingWrites.failed} failed (goal 0); SIGTERM → exit: max ${r.rollingStopMaxSeconds ?? '—'} s.`,
    `Pause (the leader stopped past its lease, then continued): ${r.faults.pause ?? 0} trials; standby leading after: max ${r.pauseFailoverMaxSeconds ?? '—'} s; the resumed leader stopped leading after: max ${r.pauseResumeStopMaxSeconds ?? '—'} s (goal ≤ ${RESUME_STOP_GOAL_SECONDS}); its writes after the takeover are split brain.`,
    '',
    `Fuzz: ${r.fuzzCases} bodies — ${Object.entries(r.fuzzOutcomes)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}; operator crashes ${r.fuzzCrashes}.`,
    ...r.fuzzRefusedUnnamed.slice(0, 10).map((x) => `- refused without naming the field: ${x.what}: ${x.message}`),
    ...r.fuzzNotReconciled.slice(0, 10).map((x) => `- accepted but not reconciled: ${x.what}`),
    '',
    'Start-up with bad settings:',
    ...r.startup.map(
      (s) =>
        `- ${s.ok ? 'ok' : 'FAIL'} ${s.case}: exit ${s.exitCode} after ${s.seconds} s: ${s.message}${s.problem ? ` (${s.problem})` : ''}`,
    ),
    '',
    'Security:',
    `- Forbidden answers to the operator: ${r.security.forbidden}${r.security.forbiddenRequests.length ? ` (${r.security.forbiddenRequests.join(', ')})` : ''}; while the apiserver restarted (authorizer not loaded yet): ${r.security.forbiddenWhileApiserverRestarted}`,
    `- granted but never used: ${r.security.unusedPermissions.join(', ') || 'none'}`,
    `- Deployment under Pod Security restricted: ${r.security.restrictedAdmission.admitted ? 'admitted' : 'REFUSED'} (${r.security.restrictedAdmission.detail})`,
    `- token in the operator's output: ${r.security.secretsLogged.length ? r.security.secretsLogged.join(', ') : 'never'}`,
    `- npm audit --omit=dev: ${r.security.npmAudit.status} (${r.security.npmAudit.detail})`,
  ];
  if (r.violations.length) {
    lines.push('', 'Violations:');
    for (const v of r.violations.slice(0, 50))
      lines.push(`- ${multi ? `seed ${v.seed} ` : ''}trial ${v.trial} (${v.kind}) ${v.invariant}: ${v.detail}`);
  }
  return lines.join('\n');
}
