import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FAULT_KINDS } from './faults.ts';
import { parseTrialId, planTrials, seeded, trialId } from './plan.ts';

const points = [
  { scenario: 'samples', writesPerStep: [3, 0, 1] },
  { scenario: 'scale', writesPerStep: [2] },
];

test('planTrials: a crash at every write point, conflict and throttle on the first and last write, one of each other kind per step', () => {
  const trials = planTrials(points, FAULT_KINDS, 7, { webhooks: true, members: true });
  const ids = trials.map((t) => t.id);
  assert.equal(new Set(ids).size, ids.length, 'ids are unique');
  const of = (kind: string) => ids.filter((id) => id.includes(`:${kind}`)).sort();
  assert.deepEqual(of('crash'), [
    'samples:1:crash@1',
    'samples:1:crash@2',
    'samples:1:crash@3',
    'samples:3:crash@1',
    'scale:1:crash@1',
    'scale:1:crash@2',
  ]);
  assert.deepEqual(of('conflict'), [
    'samples:1:conflict@1',
    'samples:1:conflict@3',
    'samples:3:conflict@1',
    'scale:1:conflict@1',
    'scale:1:conflict@2',
  ]);
  const others = ['stale', 'unobserved', 'pause', 'apiserver-restart', 'compaction', 'disconnect', 'webhook-down'];
  for (const kind of [...others, 'member-away', 'member-down'])
    assert.deepEqual(of(kind), [`samples:1:${kind}`, `samples:3:${kind}`, `scale:1:${kind}`]);
  assert.ok(!ids.some((id) => id.startsWith('samples:2:')), 'a step without writes has no trial');
});

test('planTrials: the kinds take turns, and the same seed gives the same order', () => {
  const kinds = ['crash', 'pause'] as const;
  const a = planTrials(points, kinds, 42);
  assert.deepEqual(a, planTrials(points, kinds, 42));
  assert.deepEqual(
    a.slice(0, 6).map((t) => t.fault.kind),
    ['crash', 'pause', 'crash', 'pause', 'crash', 'pause'],
  );
  const orders = new Set(
    [1, 2, 3, 4, 5].map((seed) =>
      planTrials(points, ['crash'], seed)
        .map((t) => t.id)
        .join(),
    ),
  );
  assert.ok(orders.size > 1, 'another seed, another order');
  assert.deepEqual(
    planTrials(points, ['throttle'], 1).map((t) => t.fault.kind),
    ['throttle', 'throttle', 'throttle', 'throttle', 'throttle'],
  );
});

test('planTrials: each platform fault once per step with writes; webhook-down only for a project with webhooks', () => {
  const platform = ['apiserver-restart', 'compaction', 'disconnect', 'webhook-down'] as const;
  const withWebhooks = planTrials(points, platform, 3, { webhooks: true }).map((t) => t.id);
  for (const kind of platform)
    assert.deepEqual(
      withWebhooks.filter((id) => id.endsWith(`:${kind}`)).sort(),
      [`samples:1:${kind}`, `samples:3:${kind}`, `scale:1:${kind}`],
      kind,
    );
  assert.deepEqual(
    withWebhooks.slice(0, 4).map((id) => id.split(':')[2]),
    ['apiserver-restart', 'compaction', 'disconnect', 'webhook-down'],
    'the kinds take turns in the order of FAULT_KINDS',
  );
  for (const without of [planTrials(points, platform, 3, { webhooks: false }), planTrials(points, platform, 3)]) {
    assert.ok(!without.some((t) => t.fault.kind === 'webhook-down'), 'no webhook-down without webhooks');
    assert.equal(without.length, 9);
  }
});

test('planTrials: member-away and member-down once per step with writes, only for a run with members', () => {
  const kinds = ['member-away', 'member-down'] as const;
  assert.deepEqual(planTrials(points, kinds, 3), [], 'none without members');
  assert.deepEqual(planTrials(points, kinds, 3, { webhooks: true }), [], 'none without members');
  const ids = planTrials(points, kinds, 3, { members: true }).map((t) => t.id);
  for (const kind of kinds)
    assert.deepEqual(ids.filter((id) => id.endsWith(`:${kind}`)).sort(), [
      `samples:1:${kind}`,
      `samples:3:${kind}`,
      `scale:1:${kind}`,
    ]);
  const hubOnly = [{ scenario: 'samples', writesPerStep: [3, 0, 1], memberWritesPerStep: [2, 0, 0] }];
  assert.deepEqual(
    planTrials(hubOnly, kinds, 3, { members: true }).map((t) => t.id),
    ['samples:1:member-away', 'samples:1:member-down'],
    'a step without writes in a member has none',
  );
  // not the platform's cadence: they take their turn from the first round
  assert.deepEqual(
    planTrials(points, ['crash', 'member-away'], 3, { members: true })
      .slice(0, 2)
      .map((t) => t.fault.kind),
    ['crash', 'member-away'],
  );
});

test('trial ids round-trip; what is not one is refused', () => {
  for (const fault of [
    { kind: 'crash', step: 1, k: 2 },
    { kind: 'stale', step: 0 },
    { kind: 'apiserver-restart', step: 1 },
    { kind: 'webhook-down', step: 0 },
  ] as const) {
    const id = trialId('my:scenario', fault);
    assert.deepEqual(parseTrialId(id), { scenario: 'my:scenario', fault });
  }
  assert.deepEqual(parseTrialId('samples:2:apiserver-restart'), {
    scenario: 'samples',
    fault: { kind: 'apiserver-restart', step: 1 },
  });
  for (const bad of [
    'samples',
    'samples:0:crash@1',
    'samples:1:melt',
    'samples:1:crash@x',
    'samples:fault-free',
    'samples:1:webhook-',
    'samples:1:-down',
    'samples:1:webhook--down',
    'samples:1:apiserver-melt',
  ])
    assert.equal(parseTrialId(bad), undefined, bad);
});

test('seeded: reproducible numbers in [0, 1)', () => {
  const a = seeded(9);
  const b = seeded(9);
  for (let i = 0; i < 100; i++) {
    const x = a();
    assert.equal(x, b());
    assert.ok(x >= 0 && x < 1);
  }
});

test('planTrials: write points breadth first; the platform’s faults from the second round, one round in three', () => {
  const points = [{ scenario: 's', writesPerStep: [3, 2, 3] }];
  const crashes = planTrials(points, ['crash'], 9).map((t) => t.fault.k);
  assert.deepEqual(crashes, [1, 1, 1, 2, 2, 2, 3, 3], 'every first write before any second');
  const kinds = planTrials(points, ['stale', 'apiserver-restart'], 4).map((t) => t.fault.kind);
  assert.deepEqual(kinds, ['stale', 'stale', 'apiserver-restart', 'stale', 'apiserver-restart', 'apiserver-restart']);
});
