import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ALONE, firstLane, LONGEST, runLanes, sumTotals, TIMED, totalsOf, withFileTimes } from './lanes.ts';

const REPORT = ['✔ a (1ms)', 'ℹ tests 3', 'ℹ suites 0', 'ℹ pass 2', 'ℹ fail 1', 'ℹ cancelled 0', 'ℹ duration_ms 5'];

test("totalsOf reads a report's counts (the last of each), sumTotals adds them up", () => {
  const one = totalsOf(`ℹ tests 9 printed by a test itself\n${REPORT.join('\n')}\n`);
  assert.deepEqual(one, { tests: 3, pass: 2, fail: 1, cancelled: 0, skipped: 0, todo: 0 });
  assert.deepEqual(sumTotals([one, one, totalsOf('')]), {
    tests: 6,
    pass: 4,
    fail: 2,
    cancelled: 0,
    skipped: 0,
    todo: 0,
  });
});

test('lanes run side by side, each its runs in order, then the shared queue; reports do not interleave; a failing run fails the run, and its lane goes on', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-lanes-'));
  try {
    // the second lane ends first: its report is still printed after the whole first one
    const file = (name: string, ms: number, ok: boolean) =>
      writeFile(
        join(dir, name),
        [
          "import { getPriority } from 'node:os';",
          "import { test } from 'node:test';",
          `console.log('${name} runs at niceness', getPriority());`,
          `test('${name}', async () => { await new Promise((r) => setTimeout(r, ${ms})); if (!${ok}) throw new Error('boom ${name}'); });`,
        ].join('\n'),
      );
    await Promise.all([
      file('a.test.mjs', 2_500, true),
      file('b.test.mjs', 10, true),
      file('c.test.mjs', 10, false),
      file('d.test.mjs', 10, true),
      file('e.test.mjs', 10, true),
    ]);
    const args = ['--test', '--test-reporter=spec', '--test-concurrency=1'];
    let text = '';
    const t0 = performance.now();
    const { failed, times } = await runLanes(
      dir,
      [
        { runs: [['a.test.mjs']], args, niceness: 0 },
        { runs: [['c.test.mjs'], ['b.test.mjs']], args, niceness: 10 },
      ],
      {
        queue: ['d.test.mjs', 'e.test.mjs'],
        out: (s) => {
          text += s;
        },
      },
    );
    assert.equal(failed, true, text);
    assert.ok(performance.now() - t0 < 2_500 + 2_500, 'side by side');
    const at = ['✔ a.test.mjs', '▶ lane 2 of 2', '✖ c.test.mjs', '✔ b.test.mjs'].map((s) => text.indexOf(s));
    assert.deepEqual(
      at.map((i) => i >= 0),
      [true, true, true, true],
      text,
    );
    assert.deepEqual(
      at,
      [...at].sort((x, y) => x - y),
      `in this order:\n${text}`,
    );
    // the second lane is free long before the first: it takes the whole queue, after its own runs, in order
    const queued = [...at, ...['✔ d.test.mjs', '✔ e.test.mjs'].map((s) => text.indexOf(s))];
    assert.deepEqual(
      queued,
      [...queued].sort((x, y) => x - y),
      `the queue, after lane 2's own runs:\n${text}`,
    );
    assert.match(
      text,
      /d\.test\.mjs runs at niceness 10/,
      'a queued file runs at the niceness of the lane that took it',
    );
    assert.match(
      text,
      /e\.test\.mjs runs at niceness 10/,
      'a queued file runs at the niceness of the lane that took it',
    );
    assert.match(text, /boom c\.test\.mjs/);
    assert.match(text, /a\.test\.mjs runs at niceness 0/);
    assert.match(text, /c\.test\.mjs runs at niceness 10/, "a lane's niceness reaches the processes its tests start");
    assert.match(text, /ℹ all 2 lanes: tests 5, pass 4, fail 1,/, "the totals of every lane's runs");
    assert.deepEqual(
      times.map((t) => [t.file, t.tests]).sort(),
      ['a', 'b', 'c', 'd', 'e'].map((f) => [join(dir, `${f}.test.mjs`), 1]),
      "each file's time, from every lane",
    );
    assert.ok((times.find((t) => t.file.endsWith('a.test.mjs'))?.seconds ?? 0) >= 2.5, 'a file takes its 2.5 s');

    text = '';
    const ok = await runLanes(dir, [{ runs: [['b.test.mjs'], []], args, niceness: 0 }], {
      queue: ['d.test.mjs'],
      out: (s) => {
        text += s;
      },
    });
    assert.equal(ok.failed, false);
    assert.match(text, /ℹ all 1 lanes: tests 2, pass 2, fail 0,/, 'the lane took the queue once its own runs ended');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the first lane: the timed integration files and the runtime's; the others are queued, the journey first", () => {
  assert.ok(TIMED.every(firstLane));
  assert.ok(!ALONE.some(firstLane), 'the ALONE files are a run of their own, before the rest of the first lane');
  assert.equal(firstLane('packages/runtime/test/cache.test.ts'), true);
  assert.equal(firstLane('packages/create-opkit/test/journey.test.ts'), false);
  assert.equal(firstLane('packages/cli/test/scaffold.test.ts'), false);
  assert.ok(!LONGEST.some((f) => firstLane(f) || ALONE.includes(f)), 'the longest files are queued');
});

test('the file-times reporter is added beside the reporters a lane names, each of them given a destination', () => {
  const own = (dest: string) => [expect.reporter, `--test-reporter-destination=${dest}`];
  assert.deepEqual(withFileTimes(['--test'], '/t'), [
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    ...own('/t'),
  ]);
  assert.deepEqual(withFileTimes(['--test', '--test-reporter=spec'], '/t'), [
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    ...own('/t'),
  ]);
  assert.deepEqual(withFileTimes(['--test-reporter=tap', '--test-reporter-destination=out.tap'], '/t'), [
    '--test-reporter=tap',
    '--test-reporter-destination=out.tap',
    ...own('/t'),
  ]);
});

const expect = { reporter: `--test-reporter=${new URL('./file-times.ts', import.meta.url).pathname}` };
