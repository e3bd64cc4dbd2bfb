import assert from 'node:assert/strict';
import { test } from 'node:test';
import fileTimes, { parseFileTimes, slowest } from './file-times.ts';

test("the reporter writes a line per file from the runner's per-file summaries, not the whole run's", async () => {
  async function* events() {
    yield { type: 'test:pass', data: { file: '/r/a.test.ts' } };
    yield { type: 'test:summary', data: { file: '/r/a.test.ts', duration_ms: 12_345.6, counts: { tests: 4 } } };
    yield { type: 'test:summary', data: { duration_ms: 20_000, counts: { tests: 9 } } };
  }
  const lines: string[] = [];
  for await (const line of fileTimes(events())) lines.push(line);
  assert.deepEqual(parseFileTimes(lines.join('')), [{ file: '/r/a.test.ts', seconds: 12.3, tests: 4 }]);
  assert.deepEqual(parseFileTimes('not json\n{"broken"\n{"file":1}\n'), [], 'other lines are skipped');
});

test('slowest: the slowest first, at most n, paths relative to the root, with the total', () => {
  const times = [
    { file: '/r/x.test.ts', seconds: 3, tests: 1 },
    { file: '/r/pkg/y.test.ts', seconds: 120.25, tests: 12 },
    { file: '/elsewhere/z.test.ts', seconds: 7, tests: 2 },
  ];
  assert.deepEqual(slowest(times, 2, '/r'), [
    'the 2 slowest of 3 test files (130.3 s in all, lanes overlap):',
    '  120.3 s   12 tests  pkg/y.test.ts',
    '    7.0 s    2 tests  /elsewhere/z.test.ts',
  ]);
});
