/**
 * @module scripts/lanes
 * `npm test`'s lanes: several `node --test` runs side by side, each over its own files one at a time. One lane's report
 * is printed at a time, in lane order: the first as it runs; once a lane ended, the next one's report so far, and then
 * the rest as it runs, so no two reports interleave. A lane with a niceness runs at that lower CPU priority, and so does every
 * process its tests start (they inherit it). The totals of all lanes are printed last.
 *
 * `npm test` runs in the first lane, at normal priority, the unit files, the integration files whose assertions bound a
 * time (`TIMED`: a Lease's failover, a drain, a rotation under traffic, a restart's recovery) and, to make the two
 * lanes about as long, the runtime's other integration files (`firstLane`); the rest in the second; then the `ALONE`
 * files by themselves.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FileTime, parseFileTimes } from './file-times.ts';

const FILE_TIMES_REPORTER = new URL('./file-times.ts', import.meta.url).pathname;

/**
 * Test files that run by themselves once the lanes ended, with the machine to themselves, because each failed once
 * beside the second lane on a bound that load stretches:
 * - the chaos test, whose goals bound times (a failover within 17 s) and whose fault trials race the operator against
 *   its informers' lag;
 * - the sharding test, whose Leases last 4 s: a graceful hand-off once took longer than that;
 * - the informer test, whose backoff trials time two outages to the second (fresh clone 8);
 * - `opkit run`'s process test, whose Ctrl-C trials signal a process group within milliseconds of its start (fresh
 *   clone 9; 0 failures in 10 runs by itself).
 */
export const ALONE: readonly string[] = [
  'operators/appservice/test/chaos.test.ts',
  'packages/runtime/test/sharding.test.ts',
  'packages/runtime/test/informer.test.ts',
  'packages/cli/src/commands/run-process.test.ts',
];

/** Integration files whose assertions bound a time: the first lane's, at normal priority. */
export const TIMED: readonly string[] = [
  'operators/appservice/test/e2e.test.ts',
  'operators/kvstore/test/chaos.test.ts',
  'operators/kvstore/test/restore.test.ts',
  'packages/cli/test/run-interrupt.test.ts',
  'packages/runtime/test/leader.test.ts',
  'packages/runtime/test/webhook.test.ts',
];

/**
 * Whether `npm test` runs an integration file in the first lane: a `TIMED` one, or one of the runtime's (they even the
 * lanes: in a fresh clone the first lane took 793 s and the second 1,180 s before they moved).
 */
export function firstLane(file: string): boolean {
  return !ALONE.includes(file) && (TIMED.includes(file) || file.startsWith('packages/runtime/test/'));
}

/** One lane: the test files it runs, the test runner's arguments, and its niceness (0: normal priority). */
export interface Lane {
  readonly files: readonly string[];
  readonly args: readonly string[];
  readonly niceness: number;
}

/** The counts of a report's `ℹ tests N`, `ℹ pass N`, … lines (0 where a line is missing). */
export interface Totals {
  readonly tests: number;
  readonly pass: number;
  readonly fail: number;
  readonly cancelled: number;
  readonly skipped: number;
  readonly todo: number;
}

const KEYS = ['tests', 'pass', 'fail', 'cancelled', 'skipped', 'todo'] as const;

/** The totals of one test runner report (the last of each line, should a test print one of its own). */
export function totalsOf(report: string): Totals {
  const found = (key: string) => {
    const all = [...report.matchAll(new RegExp(`^ℹ ${key} (\\d+)$`, 'gm'))];
    return Number(all.at(-1)?.[1] ?? 0);
  };
  return Object.fromEntries(KEYS.map((k) => [k, found(k)])) as unknown as Totals;
}

/** The totals of several reports, added up. */
export function sumTotals(all: readonly Totals[]): Totals {
  return Object.fromEntries(KEYS.map((k) => [k, all.reduce((n, t) => n + t[k], 0)])) as unknown as Totals;
}

/** What the lanes did: whether any failed (or could not start), and each test file's time (scripts/file-times). */
export interface LanesResult {
  readonly failed: boolean;
  readonly times: readonly FileTime[];
}

/**
 * A lane's test runner arguments with the file-times reporter added, writing to `destination`: each reporter named
 * before it is given stdout where it has no destination of its own (the runner pairs them in order), and the runner's
 * default (spec) is named when no reporter is.
 */
export function withFileTimes(args: readonly string[], destination: string): string[] {
  const reporters = args.filter((a) => a.startsWith('--test-reporter=')).length;
  const destinations = args.filter((a) => a.startsWith('--test-reporter-destination=')).length;
  const own =
    reporters === 0
      ? ['--test-reporter=spec', '--test-reporter-destination=stdout']
      : Array.from({ length: Math.max(0, reporters - destinations) }, () => '--test-reporter-destination=stdout');
  return [...args, ...own, `--test-reporter=${FILE_TIMES_REPORTER}`, `--test-reporter-destination=${destination}`];
}

/** Runs the lanes side by side from `cwd`; see `LanesResult`. */
export async function runLanes(
  cwd: string,
  lanes: readonly Lane[],
  out: (text: string) => void = (text) => process.stdout.write(text),
): Promise<LanesResult> {
  // each lane is a test run of its own, also when runLanes itself runs inside one (its tests)
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const timesDir = mkdtempSync(join(tmpdir(), 'opkit-file-times-'));
  const timesFile = (i: number) => join(timesDir, `lane-${i + 1}.jsonl`);
  const reports = lanes.map(() => '');
  const ended: (number | undefined)[] = lanes.map(() => undefined);
  let printed = 0;
  // the lane being printed streams; once it ended, the next one's report so far is printed and it streams on
  const flush = () => {
    while (ended[printed] !== undefined && printed + 1 < lanes.length) {
      printed++;
      out(
        `\n▶ lane ${printed + 1} of ${lanes.length} (its files: ${lanes[printed]?.files.length})\n${reports[printed]}`,
      );
    }
  };
  out(`▶ lane 1 of ${lanes.length} (its files: ${lanes[0]?.files.length})\n`);
  const codes = await Promise.all(
    lanes.map(
      (lane, i) =>
        new Promise<number>((done) => {
          const child = spawn(process.execPath, [...withFileTimes(lane.args, timesFile(i)), ...lane.files], {
            cwd,
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          if (lane.niceness !== 0 && child.pid !== undefined) setPriority(child.pid, lane.niceness);
          const take = (chunk: Buffer) => {
            const text = chunk.toString('utf8');
            reports[i] += text;
            if (i === printed) out(text);
          };
          child.stdout.on('data', take);
          child.stderr.on('data', take);
          child.on('error', (err) => {
            reports[i] += `✖ lane ${i + 1} did not start: ${err.message}\n`;
          });
          child.on('close', (code, signal) => {
            if (signal) reports[i] += `✖ lane ${i + 1} ended by ${signal}\n`;
            ended[i] = code ?? 1;
            flush();
            done(ended[i] ?? 1);
          });
        }),
    ),
  );
  const t = sumTotals(reports.map(totalsOf));
  out(
    `\nℹ all ${lanes.length} lanes: tests ${t.tests}, pass ${t.pass}, fail ${t.fail}, cancelled ${t.cancelled}, ` +
      `skipped ${t.skipped}, todo ${t.todo}\n`,
  );
  const times = lanes.flatMap((_lane, i) => {
    try {
      return parseFileTimes(readFileSync(timesFile(i), 'utf8'));
    } catch {
      return []; // the lane did not start
    }
  });
  rmSync(timesDir, { recursive: true, force: true });
  return { failed: codes.some((c) => c !== 0), times };
}
