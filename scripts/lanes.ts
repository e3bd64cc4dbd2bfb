/**
 * @module scripts/lanes
 * `npm test`'s lanes: several lanes side by side, each a sequence of `node --test` runs, one after the other, each over
 * its own files one at a time; then each lane takes files from a shared queue, one file per run, until it is empty, so
 * the lanes end within about one file of each other. One lane's report is printed at a time, in lane order: the first
 * as it runs; once a lane ended, the next one's report so far, and then the rest as it runs, so no two reports
 * interleave. A lane with a niceness runs at that lower CPU priority, and so does every process its tests start (they
 * inherit it). The totals of all lanes are printed last.
 *
 * `npm test` runs two lanes. The first, at normal priority: the `ALONE` files, then the unit files, the integration
 * files whose assertions bound a time (`TIMED`: a Lease's failover, a drain, a rotation under traffic, a restart's
 * recovery) and the runtime's other integration files (`firstLane`), then the queue. The second, at niceness
 * `BULK_NICENESS`: the queue from the start, every other integration file, `LONGEST` first. So no test at normal
 * priority ever shares the machine with another test at that priority: an `ALONE` or `TIMED` file has beside it only
 * the second lane's processes, which under contention get about 1/70 of a core's share each (the kernel's weights of
 * niceness 0 and 19: 1024 and 15).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { setPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FileTime, parseFileTimes } from './file-times.ts';

const FILE_TIMES_REPORTER = new URL('./file-times.ts', import.meta.url).pathname;

/**
 * Test files that run first in the first lane, before any other file at normal priority, because each failed once
 * beside a second lane at niceness 10 on a bound that load stretches:
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

/**
 * The second lane's niceness, the lowest priority there is: the `ALONE` files, which mostly wait (the chaos test keeps
 * the CPUs about 90 % idle), leave the second lane nearly the whole machine, and take it back at once when they need it.
 */
export const BULK_NICENESS = 19;

/**
 * Queued files that take minutes (the new user's journey: a release, then three projects from the registry): first in
 * the queue, so no lane is left with one of them at the end while the other has nothing to do.
 */
export const LONGEST: readonly string[] = ['packages/create-opkit/test/journey.test.ts'];

/**
 * Integration files whose assertions bound a time: the first lane's, at normal priority. The chaos runs of `opkit
 * chaos` (the planted bugs, the scaffolded project) bound a Lease's renewal to 3 s and judge a step after 2 s of quiet.
 */
export const TIMED: readonly string[] = [
  'operators/appservice/test/e2e.test.ts',
  'operators/planted/test/planted.test.ts',
  'packages/cli/test/chaos.test.ts',
  'operators/kvstore/test/chaos.test.ts',
  'operators/kvstore/test/restore.test.ts',
  'packages/cli/test/run-interrupt.test.ts',
  'packages/runtime/test/leader.test.ts',
  'packages/runtime/test/webhook.test.ts',
];

/**
 * Whether `npm test` runs an integration file in the first lane's own runs, at normal priority: a `TIMED` one, or one of
 * the runtime's (they moved there to even the lanes before the queue did, and stay where every fresh clone ran them).
 */
export function firstLane(file: string): boolean {
  return !ALONE.includes(file) && (TIMED.includes(file) || file.startsWith('packages/runtime/test/'));
}

/**
 * One lane: its runs, one after the other (each a test runner process over its files; Node's runner orders a run's
 * files by name, so what must come first is a run of its own), the test runner's arguments, and its niceness (0: normal
 * priority).
 */
export interface Lane {
  readonly runs: readonly (readonly string[])[];
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

/** What `runLanes` takes besides the lanes. */
export interface LanesOptions {
  /** Files any lane takes, one per run, once its own runs ended; in this order. */
  readonly queue?: readonly string[];
  /** Where the reports go (stdout). */
  readonly out?: (text: string) => void;
}

/** Runs the lanes side by side from `cwd`, then the queue; see `LanesResult`. */
export async function runLanes(cwd: string, lanes: readonly Lane[], options: LanesOptions = {}): Promise<LanesResult> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const queue = [...(options.queue ?? [])];
  // each lane is a test run of its own, also when runLanes itself runs inside one (its tests)
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const timesDir = mkdtempSync(join(tmpdir(), 'opkit-file-times-'));
  /** The times file of each run, in the order the runs started. */
  const timesFiles: string[] = [];
  const reports = lanes.map(() => '');
  /** Each run's own report (a run prints its own totals), by its times file. */
  const runReports = new Map<string, string>();
  const ended: boolean[] = lanes.map(() => false);
  const heading = (i: number) => {
    const own = lanes[i]?.runs.reduce((n, files) => n + files.length, 0);
    return `▶ lane ${i + 1} of ${lanes.length} (its files: ${own}${(options.queue?.length ?? 0) > 0 ? ', then the shared queue' : ''})\n`;
  };
  let printed = 0;
  // the lane being printed streams; once it ended, the next one's report so far is printed and it streams on
  const flush = () => {
    while (ended[printed] && printed + 1 < lanes.length) {
      printed++;
      out(`\n${heading(printed)}${reports[printed]}`);
    }
  };
  /** One run of lane `i` over `files`: its exit code (1 when it did not start or was ended by a signal). */
  const runOnce = (lane: Lane, i: number, files: readonly string[]) =>
    new Promise<number>((done) => {
      const timesFile = join(timesDir, `run-${timesFiles.length + 1}.jsonl`);
      timesFiles.push(timesFile);
      const take = (chunk: Buffer | string) => {
        const text = chunk.toString();
        reports[i] += text;
        runReports.set(timesFile, (runReports.get(timesFile) ?? '') + text);
        if (i === printed) out(text);
      };
      const child = spawn(process.execPath, [...withFileTimes(lane.args, timesFile), ...files], {
        cwd,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      if (lane.niceness !== 0 && child.pid !== undefined) setPriority(child.pid, lane.niceness);
      child.stdout.on('data', take);
      child.stderr.on('data', take);
      child.on('error', (err) => take(`✖ lane ${i + 1} did not start: ${err.message}\n`));
      child.on('close', (code, signal) => {
        if (signal) take(`✖ lane ${i + 1} ended by ${signal}\n`);
        done(code ?? 1);
      });
    });
  out(heading(0));
  const codes = await Promise.all(
    lanes.map(async (lane, i) => {
      const laneCodes: number[] = [];
      for (const files of lane.runs) if (files.length > 0) laneCodes.push(await runOnce(lane, i, files));
      for (let file = queue.shift(); file !== undefined; file = queue.shift())
        laneCodes.push(await runOnce(lane, i, [file]));
      ended[i] = true;
      flush();
      return laneCodes.find((c) => c !== 0) ?? 0;
    }),
  );
  const t = sumTotals([...runReports.values()].map(totalsOf));
  out(
    `\nℹ all ${lanes.length} lanes: tests ${t.tests}, pass ${t.pass}, fail ${t.fail}, cancelled ${t.cancelled}, ` +
      `skipped ${t.skipped}, todo ${t.todo}\n`,
  );
  const times = timesFiles.flatMap((file) => {
    try {
      return parseFileTimes(readFileSync(file, 'utf8'));
    } catch {
      return []; // the run did not start
    }
  });
  rmSync(timesDir, { recursive: true, force: true });
  return { failed: codes.some((c) => c !== 0), times };
}
