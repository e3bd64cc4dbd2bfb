/**
 * @module chaos/run
 * The whole reliability and security suite, from a seed: start-up errors, `trials` trials of each fault kind on two
 * operator replicas serving their webhooks behind a Service (interleaved, so kinds meet each other's after-effects), the hostile-input fuzz, then the
 * security checks over everything the operator did. Returns the figures (chaos/report); `passed` says whether every
 * goal held.
 */
import { Namespaces } from '@opkit/runtime/kinds';
import { chaosCluster } from './cluster.ts';
import { crashSigns, FAULT_KINDS, type FaultKind, settle, type TrialResult, TrialRunner } from './faults.ts';
import { fuzzCases, runFuzz } from './fuzz.ts';
import { Monitor } from './monitor.ts';
import { type ChaosReport, type RunViolation, summarise } from './report.ts';
import { Rng } from './rng.ts';
import { securityReport } from './security.ts';
import { startupChecks } from './startup.ts';

export interface ChaosOptions {
  readonly trials: number;
  readonly seed: number;
  readonly kinds?: readonly FaultKind[];
  readonly fuzz: number;
  readonly log?: (line: string) => void;
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const log = o.log ?? (() => {});
  const rng = new Rng(o.seed);
  const kinds = o.kinds ?? FAULT_KINDS;
  log('start-up with bad settings, while the control plane + two operator replicas start behind fault proxies…');
  // the start-up checks mostly wait (an unreachable cluster's retries), so the chaos cluster starts meanwhile
  const [checks, cluster] = await Promise.allSettled([startupChecks(), chaosCluster()]);
  if (checks.status === 'rejected' || cluster.status === 'rejected') {
    if (cluster.status === 'fulfilled') await cluster.value.stop();
    throw checks.status === 'rejected' ? checks.reason : (cluster as PromiseRejectedResult).reason;
  }
  const startup = checks.value;
  for (const s of startup)
    log(`  ${s.ok ? 'ok  ' : 'FAIL'} ${s.case}: exit ${s.exitCode} in ${s.seconds} s — ${s.message}`);
  const c = cluster.value;
  const ctl = new AbortController();
  try {
    const m = new Monitor(c.admin, ctl.signal);
    await m.synced();
    const runner = new TrialRunner(c, m, rng);
    const violations: RunViolation[] = [];
    const first = await runner.prepare(4);
    violations.push(...first.map((v) => ({ ...v, seed: o.seed, trial: 0, kind: 'first convergence' })));
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
        violations.push(...r.violations.map((v) => ({ ...v, seed: o.seed, trial: results.length, kind })));
        const extra = [
          r.failoverSeconds !== undefined ? `failover ${r.failoverSeconds.toFixed(1)} s` : '',
          r.handoverSeconds !== undefined ? `handover ${r.handoverSeconds.toFixed(2)} s` : '',
          r.takeoverSeconds !== undefined ? `Lease taken → workers ${r.takeoverSeconds.toFixed(3)} s` : '',
          r.detectionSeconds !== undefined ? `detected ${r.detectionSeconds.toFixed(1)} s` : '',
          r.stopSeconds !== undefined ? `stopped in ${r.stopSeconds.toFixed(1)} s` : '',
          r.resumeStopSeconds !== undefined ? `stopped leading ${r.resumeStopSeconds.toFixed(2)} s after SIGCONT` : '',
          r.webhookWrites ? `webhook writes ${r.webhookWrites.sent}, failed ${r.webhookWrites.failed}` : '',
          r.stopPhases ? `its stop: ${r.stopPhases}` : '',
        ]
          .filter(Boolean)
          .join(', ');
        log(
          `trial ${results.length} ${kind} (${r.action}): fault ${r.faultSeconds.toFixed(1)} s, recovered in ${r.recoverySeconds.toFixed(1)} s${extra ? `, ${extra}` : ''}${r.slow ? ` (slow${r.waitingOnNodes ? ', waiting on the nodes' : ''}: ${r.slow})` : ''}${r.violations.length ? ` — ${r.violations.length} VIOLATIONS: ${r.violations.map((v) => v.detail).join('; ')}` : ''}`,
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
    violations.push(...after.map((v) => ({ ...v, seed: o.seed, trial: results.length + 1, kind: 'after the fuzz' })));

    log('security…');
    const events = await runner.auditEvents();
    const security = await securityReport(
      c.admin,
      events,
      c.replicas.flatMap((r) => r.leaks),
      runner.restartWindows,
    );
    return summarise({
      seeds: [o.seed],
      results,
      violations,
      fuzzCrashes: crashes,
      fuzzOutcomes,
      fuzzRefusedUnnamed: outcomes.filter((x) => x.result === 'refused-unnamed'),
      fuzzNotReconciled: outcomes.filter((x) => x.result === 'not-reconciled' || x.result === 'error'),
      startup,
      security,
    });
  } finally {
    ctl.abort();
    await c.stop();
  }
}
