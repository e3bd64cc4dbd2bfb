/**
 * @module chaos/run
 * The whole reliability and security suite, from a seed: start-up errors, `trials` trials of each fault kind on two
 * operator replicas (interleaved, so kinds meet each other's after-effects), the hostile-input fuzz, then the
 * security checks over everything the operator did. Returns the figures; `passed` says whether every goal held.
 */
import { Namespaces } from '@opkit/runtime';
import { chaosCluster } from './cluster.ts';
import { crashSigns, FAULT_KINDS, type FaultKind, settle, type TrialResult, TrialRunner } from './faults.ts';
import { type FuzzOutcome, fuzzCases, runFuzz } from './fuzz.ts';
import { Monitor, type Violation } from './monitor.ts';
import { Rng } from './rng.ts';
import { type SecurityReport, securityReport } from './security.ts';
import { type StartupCheck, startupChecks } from './startup.ts';

export interface ChaosOptions {
  readonly trials: number;
  readonly seed: number;
  readonly kinds?: readonly FaultKind[];
  readonly fuzz: number;
  readonly log?: (line: string) => void;
}

export interface ChaosReport {
  readonly seed: number;
  readonly trials: number;
  readonly faults: Record<string, number>;
  readonly violations: (Violation & { readonly trial: number; readonly kind: string })[];
  readonly recoveryP50Seconds: number;
  readonly recoveryP99Seconds: number;
  /** kill: SIGKILL of the leader → the standby holds the Lease. */
  readonly failoverMaxSeconds: number | null;
  /** leader-cutoff: the cut → the standby holds the Lease (the lease must expire first: up to 15 s + a retry). */
  readonly cutoffFailoverMaxSeconds: number | null;
  readonly handoverMaxSeconds: number | null;
  readonly leaderStopMaxSeconds: number | null;
  readonly watchHangDetectionMaxSeconds: number | null;
  readonly fuzzCases: number;
  readonly fuzzCrashes: number;
  readonly fuzzOutcomes: Record<string, number>;
  readonly fuzzRefusedUnnamed: FuzzOutcome[];
  readonly fuzzNotReconciled: FuzzOutcome[];
  readonly startup: StartupCheck[];
  readonly security: SecurityReport;
  readonly results: TrialResult[];
  readonly passed: boolean;
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)] as number);
const round = (n: number) => Math.round(n * 100) / 100;
const max = (xs: readonly (number | undefined)[]) => {
  const v = xs.filter((x): x is number => x !== undefined);
  return v.length ? round(Math.max(...v)) : null;
};

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const log = o.log ?? (() => {});
  const rng = new Rng(o.seed);
  const kinds = o.kinds ?? FAULT_KINDS;
  log('start-up with bad settings…');
  const startup = await startupChecks();
  for (const s of startup)
    log(`  ${s.ok ? 'ok  ' : 'FAIL'} ${s.case}: exit ${s.exitCode} in ${s.seconds} s — ${s.message}`);

  log('control plane + two operator replicas behind fault proxies…');
  const c = await chaosCluster();
  const ctl = new AbortController();
  try {
    const m = new Monitor(c.admin, ctl.signal);
    await m.synced();
    const runner = new TrialRunner(c, m, rng);
    const violations: ChaosReport['violations'] = [];
    const first = await runner.prepare(4);
    violations.push(...first.map((v) => ({ ...v, trial: 0, kind: 'first convergence' })));
    const results: TrialResult[] = [];
    for (let round = 0; round < o.trials; round++)
      for (const kind of kinds) {
        let r: TrialResult;
        try {
          r = await runner.run(kind);
        } catch (err) {
          // the harness itself failed (a request right after a restart, …): a violation, and the run goes on
          const detail = `the trial could not run: ${(err as Error).message}`;
          r = {
            kind,
            action: 'none',
            faultSeconds: 0,
            recoverySeconds: 0,
            violations: [{ invariant: 'harness', detail }],
          };
        }
        results.push(r);
        violations.push(...r.violations.map((v) => ({ ...v, trial: results.length, kind })));
        const extra = [
          r.failoverSeconds !== undefined ? `failover ${r.failoverSeconds.toFixed(1)} s` : '',
          r.handoverSeconds !== undefined ? `handover ${r.handoverSeconds.toFixed(2)} s` : '',
          r.detectionSeconds !== undefined ? `detected ${r.detectionSeconds.toFixed(1)} s` : '',
        ]
          .filter(Boolean)
          .join(', ');
        log(
          `trial ${results.length} ${kind} (${r.action}): fault ${r.faultSeconds.toFixed(1)} s, recovered in ${r.recoverySeconds.toFixed(1)} s${extra ? `, ${extra}` : ''}${r.violations.length ? ` — ${r.violations.length} VIOLATIONS: ${r.violations.map((v) => v.detail).join('; ')}` : ''}`,
        );
      }

    log(`fuzz: ${o.fuzz} hostile AppService bodies…`);
    await c.admin.create(Namespaces, { metadata: { name: 'fuzz' } });
    const exitsBefore = c.replicas.map((r) => r.exits.length);
    for (const r of c.replicas) r.takeLog();
    const outcomes = await runFuzz(c.admin, 'fuzz', fuzzCases(rng, o.fuzz));
    // a crash: an exit the harness did not cause, or a crash sign (stack trace, unhandled rejection) in the output;
    // error logs for bodies the apiserver accepts but refuses as pods (FailedCreate) are the operator doing its job
    const crashes =
      c.replicas.reduce((n, r, i) => n + r.exits.slice(exitsBefore[i]).filter((e) => !e.caused).length, 0) +
      c.replicas.flatMap((r) => crashSigns(r.name, r.takeLog())).length;
    const fuzzOutcomes: Record<string, number> = {};
    for (const x of outcomes) fuzzOutcomes[x.result] = (fuzzOutcomes[x.result] ?? 0) + 1;
    log(`fuzz: ${JSON.stringify(fuzzOutcomes)}, operator crashes ${crashes}`);
    const after = await settle(m);
    violations.push(...after.map((v) => ({ ...v, trial: results.length + 1, kind: 'after the fuzz' })));

    log('security…');
    const events = await runner.auditEvents();
    const security = await securityReport(
      c.admin,
      events,
      c.replicas.flatMap((r) => r.leaks),
      runner.restartWindows,
    );
    const recovery = results.map((r) => r.recoverySeconds).sort((a, b) => a - b);
    const faults: Record<string, number> = {};
    for (const r of results) faults[r.kind] = (faults[r.kind] ?? 0) + 1;
    const unnamed = outcomes.filter((x) => x.result === 'refused-unnamed');
    const notReconciled = outcomes.filter((x) => x.result === 'not-reconciled' || x.result === 'error');
    const report = {
      seed: o.seed,
      trials: results.length,
      faults,
      violations,
      recoveryP50Seconds: round(quantile(recovery, 0.5)),
      recoveryP99Seconds: round(quantile(recovery, 0.99)),
      failoverMaxSeconds: max(results.filter((r) => r.kind === 'kill').map((r) => r.failoverSeconds)),
      cutoffFailoverMaxSeconds: max(results.filter((r) => r.kind === 'leader-cutoff').map((r) => r.failoverSeconds)),
      handoverMaxSeconds: max(results.map((r) => r.handoverSeconds)),
      leaderStopMaxSeconds: max(results.filter((r) => r.kind === 'leader-cutoff').map((r) => r.detectionSeconds)),
      watchHangDetectionMaxSeconds: max(results.filter((r) => r.kind === 'watch-hang').map((r) => r.detectionSeconds)),
      fuzzCases: outcomes.length,
      fuzzCrashes: crashes,
      fuzzOutcomes,
      fuzzRefusedUnnamed: unnamed,
      fuzzNotReconciled: notReconciled,
      startup,
      security,
      results,
    };
    const passed =
      violations.length === 0 &&
      crashes === 0 &&
      unnamed.length === 0 &&
      notReconciled.length === 0 &&
      startup.every((s) => s.ok) &&
      security.forbidden === 0 &&
      security.unusedPermissions.length === 0 &&
      security.restrictedAdmission.admitted &&
      security.secretsLogged.length === 0 &&
      security.npmAudit.status !== 'findings' &&
      (report.failoverMaxSeconds ?? 0) <= 17 &&
      (report.handoverMaxSeconds ?? 0) <= 3 &&
      (report.watchHangDetectionMaxSeconds ?? 0) <= 60;
    return { ...report, passed };
  } finally {
    ctl.abort();
    await c.stop();
  }
}

/** The readable report. */
export function chaosMarkdown(r: ChaosReport): string {
  const lines = [
    `# Chaos report (seed ${r.seed}) — ${r.passed ? 'PASSED' : 'FAILED'}`,
    '',
    `Trials: ${r.trials} (${Object.entries(r.faults)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}). Violations: ${r.violations.length}.`,
    `Recovery (fault lifted → settled): p50 ${r.recoveryP50Seconds} s, p99 ${r.recoveryP99Seconds} s.`,
    `Failover (leader lost → standby leads): max ${r.failoverMaxSeconds ?? '—'} s (goal ≤ 17). Handover (SIGTERM → successor leads): max ${r.handoverMaxSeconds ?? '—'} s (goal ≤ 3).`,
    `Cut-off leader stopped after: max ${r.leaderStopMaxSeconds ?? '—'} s (the lease is 15 s); standby leading after: max ${r.cutoffFailoverMaxSeconds ?? '—'} s. Silent watch hang detected after: max ${r.watchHangDetectionMaxSeconds ?? '—'} s (goal ≤ 60).`,
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
    for (const v of r.violations.slice(0, 50)) lines.push(`- trial ${v.trial} (${v.kind}) ${v.invariant}: ${v.detail}`);
  }
  return lines.join('\n');
}
