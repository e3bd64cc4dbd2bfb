// The planted bugs, each caught by the generic invariants of `@opkit/testenv/chaos` and each fix passing: a reduced
// run (the one trial that catches each bug, replayed by its id, on one control plane for all). docs/chaos.md has the
// figures of full default runs.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Environment, start } from '@opkit/testenv';
import {
  type ChaosReport,
  type ChaosScenario,
  type ProjectChaos,
  projectChaos,
  runChaos,
  violations,
} from '@opkit/testenv/chaos';

const DIR = fileURLToPath(new URL('..', import.meta.url));

/** Each bug, the trial that catches it, and the invariant that must be broken. */
const CASES = [
  { bug: 'status-timestamp', trial: 'samples:fault-free', invariant: 'settles' },
  { bug: 'orphan-delete', trial: 'run-then-stop:fault-free', invariant: 'no-orphans' },
  { bug: 'not-idempotent', trial: 'samples:1:crash@1', invariant: 'same-children' },
  { bug: 'intermediate-state', trial: 'samples:1:crash@1', invariant: 'same-status' },
  { bug: 'finalizer-leak', trial: 'samples:3:crash@1', invariant: 'same-objects' },
  { bug: 'stale-duplicates', trial: 'samples:1:unobserved', invariant: 'same-children', fixedToo: 'samples:1:stale' },
] as const;

let env: Environment;
let project: ProjectChaos;

before(async () => {
  project = await projectChaos(DIR);
  env = await start({ crds: project.crds, nodes: 1 });
});
after(async () => {
  await env?.stop();
});

function run(bug: string, fixed: boolean, ...trials: string[]): Promise<ChaosReport> {
  return runChaos({
    ...project,
    sharding: false,
    operator: { ...project.operator, env: { PLANTED_BUG: bug, PLANTED_FIXED: String(fixed) } },
    environment: env,
    only: trials,
    convergeTimeoutMs: 15_000,
  });
}

describe('the planted bugs: each caught by the generic invariants, each fix passing', { concurrency: 1 }, () => {
  for (const c of CASES) {
    test(`${c.bug}: ${c.trial} breaks ${c.invariant}; the fix passes it`, async () => {
      const buggy = violations(await run(c.bug, false, c.trial));
      assert.ok(
        buggy.some((v) => v.invariant === c.invariant && v.trial === c.trial),
        `expected ${c.invariant} in ${c.trial}, got: ${buggy.map((v) => `${v.invariant}: ${v.message}`).join('\n') || 'none'}`,
      );
      assert.ok(
        buggy.every((v) => v.replay.includes(`--trial '${v.trial}'`)),
        'each violation says how to replay it',
      );
      // the fix passes the same trial (and, where a half-fix would not, the trial that catches that)
      const fixed = violations(await run(c.bug, true, c.trial, ...('fixedToo' in c ? [c.fixedToo] : [])));
      assert.deepEqual(
        fixed.map((v) => `${v.invariant}: ${v.message}`),
        [],
        'the fixed version passes the same trial',
      );
    });
  }
});

/** Six Widgets, so that with three replicas some are in shards that different replicas hold; then one deleted. */
const SPREAD: ChaosScenario = {
  name: 'spread',
  steps: [
    ...['a', 'b', 'c', 'd', 'e', 'f'].map((n) => ({
      apply: { apiVersion: 'planted.example.com/v1', kind: 'Widget', metadata: { name: n }, spec: { replicas: 1 } },
    })),
    { delete: { apiVersion: 'planted.example.com/v1', kind: 'Widget', name: 'a' } },
  ],
};

test('cross-shard: run sharded, writes to other shards’ Widgets break shard-owner-only; the fix passes', async () => {
  const sharded = await projectChaos(DIR, { sharding: true });
  const once = async (fixed: boolean) =>
    violations(
      await runChaos({
        ...sharded,
        scenarios: [SPREAD],
        operator: { ...sharded.operator, env: { PLANTED_BUG: 'cross-shard', PLANTED_FIXED: String(fixed) } },
        environment: env,
        only: ['spread:fault-free'],
        convergeTimeoutMs: 15_000,
      }),
    );
  const buggy = await once(false);
  assert.ok(
    buggy.some((v) => v.invariant === 'shard-owner-only' && / wrote \(patch widgets chaos-.*\/[a-f]\)/.test(v.message)),
    `expected shard-owner-only, got: ${buggy.map((v) => `${v.invariant}: ${v.message}`).join('\n') || 'none'}`,
  );
  assert.ok(buggy[0]?.replay.endsWith(' --sharding'), 'the replay runs sharded too');
  assert.deepEqual(
    (await once(true)).map((v) => `${v.invariant}: ${v.message}`),
    [],
    'the fixed version passes',
  );
});
