import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '@opkit/testenv';
import { unusedPermissions } from './audit.ts';
import type { TrialResult } from './faults.ts';
import { type ChaosReport, chaosMarkdown, mergeReports, type Observed, summarise } from './report.ts';
import type { SecurityReport } from './security.ts';

const security = (over: Partial<SecurityReport> = {}): SecurityReport => ({
  forbidden: 0,
  forbiddenRequests: [],
  forbiddenWhileApiserverRestarted: 0,
  unusedPermissions: [],
  restrictedAdmission: { admitted: true, detail: '2/2 pods' },
  secretsLogged: [],
  npmAudit: { status: 'clean', detail: '0 findings' },
  ...over,
});
const trial = (kind: TrialResult['kind'], recoverySeconds: number, over: Partial<TrialResult> = {}): TrialResult => ({
  kind,
  action: 'scale app-0 2 → 3',
  faultSeconds: 1,
  recoverySeconds,
  violations: [],
  ...over,
});
const observed = (over: Partial<Observed> = {}): Observed => ({
  seeds: [1],
  results: [],
  violations: [],
  fuzzCrashes: 0,
  fuzzOutcomes: {},
  fuzzRefusedUnnamed: [],
  fuzzNotReconciled: [],
  startup: [{ case: 'malformed kubeconfig', exitCode: 1, seconds: 0.2, message: 'bad', ok: true }],
  security: security(),
  ...over,
});

test('summarise counts trials per kind, takes percentiles and maxima, and judges every goal', () => {
  const r = summarise(
    observed({
      results: [
        trial('kill', 0.2, { failoverSeconds: 15.04 }),
        trial('kill', 0.4, { failoverSeconds: 16.5 }),
        trial('watch-hang', 7, { detectionSeconds: 51.2, slow: 'app-1: pods not ready', waitingOnNodes: true }),
        trial('handover', 0.2, { handoverSeconds: 1.1 }),
      ],
      fuzzOutcomes: { refused: 3, reconciled: 2 },
    }),
  );
  assert.deepEqual(r.faults, { kill: 2, 'watch-hang': 1, handover: 1 });
  assert.equal(r.trials, 4);
  assert.equal(r.recoveryP50Seconds, 0.2);
  assert.equal(r.recoveryP99Seconds, 7);
  assert.deepEqual(r.slowRecoveries, { total: 1, waitingOnNodes: 1 });
  assert.equal(r.failoverMaxSeconds, 16.5);
  assert.equal(r.cutoffFailoverMaxSeconds, null);
  assert.equal(r.watchHangDetectionMaxSeconds, 51.2);
  assert.equal(r.fuzzCases, 5);
  assert.ok(r.passed);
  assert.equal(summarise(observed({ results: [trial('kill', 0.2, { failoverSeconds: 17.2 })] })).passed, false);
  const takeover = summarise(
    observed({ results: [trial('kill', 0.2, { failoverSeconds: 14, takeoverSeconds: 0.0012 })] }),
  );
  assert.equal(takeover.takeoverMaxSeconds, 0.001);
  assert.ok(takeover.passed);
  assert.equal(summarise(observed({ results: [trial('kill', 0.2, { takeoverSeconds: 1.5 })] })).passed, false);
  assert.equal(summarise(observed({ security: security({ unusedPermissions: ['delete pods'] }) })).passed, false);
  assert.equal(summarise(observed({ fuzzCrashes: 1 })).passed, false);
});

test('mergeReports keeps every trial and finding of each run', () => {
  const a: ChaosReport = summarise(
    observed({
      seeds: [11],
      results: [trial('watch-hang', 0.2, { detectionSeconds: 44 }), trial('watch-hang', 9, { detectionSeconds: 58 })],
      fuzzOutcomes: { refused: 7, reconciled: 3 },
      security: security({ unusedPermissions: ['delete pods', 'patch events'], forbiddenWhileApiserverRestarted: 2 }),
    }),
  );
  const b: ChaosReport = summarise(
    observed({
      seeds: [12],
      results: [trial('kill', 0.3, { failoverSeconds: 14 })],
      violations: [{ seed: 12, trial: 1, kind: 'kill', invariant: 'not-settled', detail: 'app-0 has 3 pods, wants 2' }],
      fuzzOutcomes: { refused: 1 },
      security: security({
        unusedPermissions: ['patch events'],
        npmAudit: { status: 'unavailable', detail: '405' },
      }),
    }),
  );
  const m = mergeReports([a, b]);
  assert.deepEqual(m.seeds, [11, 12]);
  assert.equal(m.trials, 3);
  assert.deepEqual(m.faults, { 'watch-hang': 2, kill: 1 });
  assert.equal(m.recoveryP99Seconds, 9);
  assert.equal(m.watchHangDetectionMaxSeconds, 58);
  assert.equal(m.failoverMaxSeconds, 14);
  assert.deepEqual(m.fuzzOutcomes, { refused: 8, reconciled: 3 });
  assert.equal(m.fuzzCases, 11);
  assert.equal(m.startup.length, 2);
  assert.deepEqual(m.security.unusedPermissions, ['patch events'], 'unused only if no run used it');
  assert.equal(m.security.forbiddenWhileApiserverRestarted, 2);
  assert.equal(m.security.npmAudit.status, 'unavailable', 'the worst audit status wins');
  assert.equal(m.violations.length, 1);
  assert.equal(m.passed, false);
  const text = chaosMarkdown(m);
  assert.match(text, /^# Chaos report \(seeds 11, 12\) — FAILED/);
  assert.match(text, /- seed 12 trial 1 \(kill\) not-settled: app-0 has 3 pods, wants 2/);
  assert.throws(() => mergeReports([]), /no reports/);
});

test('a streaming list (a watch with sendInitialEvents=true) counts as a use of list', () => {
  const rules = [{ apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] }];
  const watch = (uri: string) =>
    ({
      verb: 'watch',
      user: { username: 'op' },
      objectRef: { resource: 'pods', apiGroup: '' },
      responseStatus: { code: 200 },
      requestURI: uri,
    }) as AuditEvent;
  assert.deepEqual(unusedPermissions([watch('/api/v1/pods?allowWatchBookmarks=true&watch=1')], rules), ['list pods']);
  assert.deepEqual(
    unusedPermissions([watch('/api/v1/pods?resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=1')], rules),
    [],
  );
});

test("an update of a status counts as a use of patch on it (the status writer's fallback after a Conflict)", () => {
  const rules = [{ apiGroups: ['app.example.com'], resources: ['appservices/status'], verbs: ['update', 'patch'] }];
  const write = (verb: string, subresource?: string) =>
    ({
      verb,
      user: { username: 'op' },
      objectRef: { resource: 'appservices', apiGroup: 'app.example.com', ...(subresource ? { subresource } : {}) },
      responseStatus: { code: 200 },
    }) as AuditEvent;
  assert.deepEqual(unusedPermissions([write('update', 'status')], rules), []);
  assert.deepEqual(unusedPermissions([write('update')], rules), [
    'update appservices/status.app.example.com',
    'patch appservices/status.app.example.com',
  ]);
});
