import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ALONE, firstLane, runLanes, sumTotals, TIMED, totalsOf, withFileTimes } from './lanes.ts';

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

test('lanes run side by side; their reports do not interleave; a failing lane fails the run', async () => {
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
    await Promise.all([file('a.test.mjs', 600, true), file('b.test.mjs', 10, true), file('c.test.mjs', 10, false)]);
    const args = ['--test', '--test-reporter=spec', '--test-concurrency=1'];
    let text = '';
    const t0 = performance.now();
    const { failed, times } = await runLanes(
      dir,
      [
        { files: ['a.test.mjs'], args, niceness: 0 },
        { files: ['b.test.mjs', 'c.test.mjs'], args, niceness: 10 },
      ],
      (s) => {
        text += s;
      },
    );
    assert.equal(failed, true, text);
    assert.ok(performance.now() - t0 < 600 + 2_000, 'side by side');
    const at = ['✔ a.test.mjs', '▶ lane 2 of 2', '✔ b.test.mjs', '✖ c.test.mjs'].map((s) => text.indexOf(s));
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
    assert.match(text, /boom c\.test\.mjs/);
    assert.match(text, /a\.test\.mjs runs at niceness 0/);
    assert.match(text, /c\.test\.mjs runs at niceness 10/, "a lane's niceness reaches the processes its tests start");
    assert.match(text, /ℹ all 2 lanes: tests 3, pass 2, fail 1,/);
    assert.deepEqual(
      times.map((t) => [t.file, t.tests]).sort(),
      ['a', 'b', 'c'].map((f) => [join(dir, `${f}.test.mjs`), 1]),
      "each file's time, from every lane",
    );
    assert.ok((times.find((t) => t.file.endsWith('a.test.mjs'))?.seconds ?? 0) >= 0.6, 'a file takes its 600 ms');

    text = '';
    const ok = await runLanes(dir, [{ files: ['b.test.mjs'], args, niceness: 0 }], (s) => {
      text += s;
    });
    assert.equal(ok.failed, false);
    assert.match(text, /ℹ all 1 lanes: tests 1, pass 1, fail 0,/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the first lane: the timed integration files and the runtime's; the others go to the second", () => {
  assert.ok(TIMED.every(firstLane));
  assert.ok(!ALONE.some(firstLane), 'the chaos test runs by itself, in no lane');
  assert.equal(firstLane('packages/runtime/test/cache.test.ts'), true);
  assert.equal(firstLane('packages/create-opkit/test/journey.test.ts'), false);
  assert.equal(firstLane('packages/cli/test/scaffold.test.ts'), false);
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
