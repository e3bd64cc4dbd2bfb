/**
 * The reliability and security suite, reduced and deterministic (seed 7): one trial of each fault kind on two replicas,
 * 120 hostile bodies, the start-up errors and the security checks (`npm run chaos` runs the full suite). The harness
 * runs in a process of its own, which must end by itself once it has reported: a fault that leaves a socket or a
 * timer behind fails the test (`npm run chaos` ends with `process.exit`, which would hide it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { FAULT_KINDS } from '../chaos/faults.ts';
import { type ChaosReport, chaosMarkdown } from '../chaos/report.ts';

/** How long the harness's process may take to end after its report. */
const EXIT_WITHIN_MS = 30_000;

/** Runs `runChaos(options)` in a child process; its report, and whether the process ended by itself in time. */
async function runChaosAlone(options: object): Promise<{ report: ChaosReport; exitedAlone: boolean }> {
  const run = new URL('../chaos/run.ts', import.meta.url).href;
  // If the process is still there 20 s after its report, it says what holds it (on stderr, into the test's output).
  const script = `import { runChaos } from ${JSON.stringify(run)};
process.stdout.write(JSON.stringify(await runChaos(${JSON.stringify(options)})) + '\\n');
setTimeout(() => process.stderr.write('chaos harness still holds: ' + process.getActiveResourcesInfo().join(', ') + '\\n'), 20_000).unref();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let reported: ((report: ChaosReport) => void) | undefined;
  const report = new Promise<ChaosReport>((resolve) => (reported = resolve));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    if (out.endsWith('\n')) reported?.(JSON.parse(out) as ChaosReport);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const first = await Promise.race([report, exited.then((code) => code)]);
  if (typeof first !== 'object' || first === null)
    throw new Error(`the chaos harness exited ${first} without a report`);
  const timer = new Promise<'running'>((resolve) => setTimeout(resolve, EXIT_WITHIN_MS, 'running').unref());
  const exitedAlone = (await Promise.race([exited, timer])) !== 'running';
  if (!exitedAlone) child.kill('SIGKILL');
  return { report: first, exitedAlone };
}

test('faults, hostile input and least privilege: no violation, no crash, every goal met', {
  timeout: 900_000,
}, async () => {
  const { report: r, exitedAlone } = await runChaosAlone({ trials: 1, seed: 7, fuzz: 120 });
  const report = chaosMarkdown(r);
  assert.ok(exitedAlone, `the harness's process did not end by itself within ${EXIT_WITHIN_MS / 1000} s of its report`);
  assert.deepEqual(r.violations, [], report);
  assert.equal(r.trials, FAULT_KINDS.length);
  assert.equal(r.fuzzCases, 120);
  assert.equal(r.fuzzCrashes, 0, report);
  assert.deepEqual(r.fuzzRefusedUnnamed, [], report);
  assert.deepEqual(r.fuzzNotReconciled, [], report);
  assert.ok((r.fuzzOutcomes.refused ?? 0) > 0 && (r.fuzzOutcomes.reconciled ?? 0) > 0, report);
  for (const s of r.startup) assert.ok(s.ok, `${s.case}: ${s.problem}`);
  assert.equal(r.security.forbidden, 0, report);
  assert.deepEqual(r.security.unusedPermissions, [], report);
  assert.ok(r.security.restrictedAdmission.admitted, report);
  assert.deepEqual(r.security.secretsLogged, []);
  assert.notEqual(r.security.npmAudit.status, 'findings', report);
  assert.ok((r.failoverMaxSeconds ?? 0) <= 17, report);
  assert.ok((r.handoverMaxSeconds ?? 0) <= 3, report);
  assert.ok((r.watchHangDetectionMaxSeconds ?? 99) <= 60, report);
  assert.ok(r.passed, report);
});
