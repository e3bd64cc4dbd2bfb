import assert from 'node:assert/strict';
import { test } from 'node:test';
import { shardMarkdown, spread, summariseShards } from './shard-report.ts';
import type { ShardTrialResult } from './sharded.ts';

const trial = (kind: ShardTrialResult['kind'], over: Partial<ShardTrialResult> = {}): ShardTrialResult => ({
  kind,
  action: 'scale app-1 2 → 3',
  faultSeconds: 16,
  recoverySeconds: 2,
  trialSeconds: 30,
  handoffs: { acquired: 11, released: 0, freed: 0, taken: 11 },
  writesChecked: 40,
  ring: 'chaos-a 11, chaos-b 11, chaos-c 10',
  violations: [],
  ...over,
});

test('spread: median and maximum of the trials that measured it', () => {
  assert.deepEqual(spread([]), { p50: null, max: null });
  assert.deepEqual(spread([3, undefined, 1, 2]), { p50: 2, max: 3 });
  assert.deepEqual(spread([4, 1, 2, 3]), { p50: 2, max: 4 });
});

test('summariseShards: figures per kind, complete at 10 trials each, passed without violations', () => {
  const kinds = ['replica-kill', 'replica-add', 'replica-cutoff'];
  const results = [
    ...Array.from({ length: 10 }, (_, i) => trial('replica-kill', { rebalanceSeconds: 15 + i / 10 })),
    ...Array.from({ length: 10 }, () => trial('replica-add', { joinSeconds: 2, leaveSeconds: 1 })),
    trial('replica-cutoff', { rebalanceSeconds: 17, stopSeconds: 9.8 }),
  ];
  const r = summariseShards(1, kinds, results, []);
  assert.equal(r.trials, 21);
  assert.equal(r.passed, true);
  assert.equal(r.complete, false, 'replica-cutoff ran once');
  assert.deepEqual(r.kinds['replica-kill']?.rebalance, { p50: 15.4, max: 15.9 });
  assert.equal(r.kinds['replica-kill']?.writesChecked, 400);
  assert.deepEqual(r.kinds['replica-cutoff']?.stop, { p50: 9.8, max: 9.8 });
  const md = shardMarkdown(r);
  assert.match(md, /PASSED \(fewer than 10 trials of some kind\)/);
  assert.match(md, /- replica-kill: 10 trials; 0 violations; rebalance p50 15\.4 s, max 15\.9 s \(goal ≤ 20 s\)/);
  assert.match(md, /- replica-add: .*join p50 2 s, max 2 s; leave p50 1 s, max 1 s/);
  assert.match(
    md,
    /- replica-cutoff: .*cut-off replica stopped p50 9\.8 s, max 9\.8 s \(goal: the renew deadline, 10 s, \+ 0\.5 s/,
  );

  const v = { invariant: 'fence' as const, detail: 'chaos-a wrote pods/x', seed: 1, trial: 3, kind: 'replica-kill' };
  const failed = summariseShards(1, kinds, results, [v]);
  assert.equal(failed.passed, false);
  assert.equal(failed.kinds['replica-kill']?.violations, 1);
  assert.match(shardMarkdown(failed), /FAILED[\s\S]*- trial 3 \(replica-kill\) fence: chaos-a wrote pods\/x/);
});
