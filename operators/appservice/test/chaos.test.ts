/**
 * The reliability and security suite, reduced and deterministic (seed 7): one trial of each fault kind on two replicas,
 * 120 hostile bodies, the start-up errors and the security checks (`npm run chaos` runs the full suite).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAULT_KINDS } from '../chaos/faults.ts';
import { chaosMarkdown } from '../chaos/report.ts';
import { runChaos } from '../chaos/run.ts';

test('faults, hostile input and least privilege: no violation, no crash, every goal met', {
  timeout: 900_000,
}, async () => {
  const r = await runChaos({ trials: 1, seed: 7, fuzz: 120 });
  const report = chaosMarkdown(r);
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
