/*
 * The journey's phased wait (fixtures/phases.ts) on a fake clock: a slow phase that keeps changing is waited for
 * past any one quiet bound, a quiet one fails after its bound, a stopped process fails at once, and every failure
 * names the phase, what was reached and the state.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type PhaseWatch, waitInPhases } from './fixtures/phases.ts';

function clock() {
  let t = 0;
  const sleep = async (ms: number) => {
    t += ms;
  };
  return { now: () => t, sleep, at: () => t };
}

const watch = (c: ReturnType<typeof clock>, over: Partial<PhaseWatch>): PhaseWatch => ({
  progress: async () => '',
  stopped: () => undefined,
  diagnose: async () => 'STATE',
  quietMs: 60_000,
  maxMs: 600_000,
  pollMs: 1_000,
  now: c.now,
  sleep: c.sleep,
  ...over,
});

test('a phase that keeps making progress is waited for beyond its quiet bound', async () => {
  const c = clock();
  const times: string[] = [];
  await waitInPhases(
    [
      { name: 'first', reached: async () => c.at() >= 5_000 },
      { name: 'slow but moving', reached: async () => c.at() >= 185_000 },
    ],
    watch(c, {
      progress: async () => String(Math.floor(c.at() / 30_000)), // something changes every 30 s
      onReached: (phase, seconds) => times.push(`${phase}=${seconds}`),
    }),
  );
  assert.deepEqual(times, ['first=5', 'slow but moving=180']);
});

test('a phase with no progress fails after its quiet bound, naming it, what was reached and the state', async () => {
  const c = clock();
  await assert.rejects(
    waitInPhases(
      [
        { name: 'the CRD is Established', reached: async () => true },
        { name: 'the sample is Ready', reached: async () => false },
      ],
      watch(c, {}),
    ),
    (err: Error) => {
      assert.match(err.message, /^waited 60\.0 s for the sample is Ready: nothing changed for 60 s$/m);
      assert.match(err.message, /^reached: the CRD is Established \(0\.0 s\)$/m);
      assert.match(err.message, /^STATE$/m);
      return true;
    },
  );
  assert.equal(c.at(), 60_000);
});

test('progress is bounded too, and a stopped process fails at once', async () => {
  const c = clock();
  await assert.rejects(
    waitInPhases(
      [{ name: 'never', reached: async () => false }],
      watch(c, { progress: async () => String(c.at()), maxMs: 300_000 }),
    ),
    /waited 300\.0 s for never: still changing, but 300 s is the most a phase may take/,
  );
  const d = clock();
  await assert.rejects(
    waitInPhases(
      [{ name: 'the operator started its workers', reached: async () => false }],
      watch(d, { stopped: () => (d.at() >= 3_000 ? 'the operator exited with code 1' : undefined) }),
    ),
    /for the operator started its workers: the operator exited with code 1/,
  );
  assert.equal(d.at(), 3_000, 'at the first poll after it stopped');
});
