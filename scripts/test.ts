/**
 * `npm test`: everything, in order, stopping at the first failing step.
 * 1. type check (tsc --noEmit, whole repo)  2. lint and format (biome check)
 * 3. the control-plane binaries, the pinned helm and the offline validator, side by side (found, or built from Go
 *    modules with progress — the cold build happens here, not inside a test's time)
 * 4. every test with Node's test runner (unit tests beside the code, integration tests under each package's test/ and
 *    README's example under examples/, repo checks under test/).
 * No build step: the packages run from their sources (see SOURCE_CONDITION). `npm test -- --unit` runs steps 1, 2, the
 * offline validator's build and the unit tests only. Extra arguments after `--` that are file paths
 * replace the test list (run one file at a time, in one lane).
 *
 * The whole suite runs in two lanes side by side, each one file at a time (see lanes.ts). The first, at normal
 * priority, printed as it runs: the files of lanes.ts `ALONE` (the chaos, sharding and informer tests, `opkit run`'s
 * process test) first, then the unit files, the integration files whose assertions bound a time (leases, failover,
 * drains) and the runtime's. The second, at the lowest CPU priority, printed once the first ended, takes the other
 * integration files from a queue (the journey first), and so does the first lane once its own files are done.
 * At the end it prints the 20 slowest test files with their times (scripts/file-times); `--times FILE` also writes
 * every file's time to FILE as JSON.
 * Each file starts its own control plane on its own ports and run directory, so the lanes share no state (the
 * journey's release builds the packages' dist/ in place, which no other test reads: every test process runs the
 * packages from their sources).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, globSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareValidator } from '../packages/testenv/src/cel.ts';
import { resolveBinaries, resolveHelm } from '../packages/testenv/src/index.ts';
import { slowest } from './file-times.ts';
import { ALONE, BULK_NICENESS, firstLane, LONGEST, runLanes, TIMED } from './lanes.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
// Inside the repository our packages run from their TypeScript sources through the `@opkit/source` export condition
// (npm scripts get it from .npmrc); every process the tests start inherits it, however this script was started.
const SOURCE_CONDITION = '--conditions=@opkit/source';
if (!(process.env.NODE_OPTIONS ?? '').includes(SOURCE_CONDITION))
  process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} ${SOURCE_CONDITION}`.trim();
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
/** `--times FILE`: each test file's time, as JSON, besides the slowest printed at the end. */
const timesAt = args.indexOf('--times');
const timesTo = timesAt >= 0 ? args[timesAt + 1] : undefined;
if (timesAt >= 0 && (timesTo === undefined || timesTo.startsWith('--'))) {
  process.stderr.write('✖ npm test -- --times needs a file to write: npm test -- --times test-times.json\n');
  process.exit(2);
}
if (timesTo !== undefined && !existsSync(dirname(resolve(timesTo)))) {
  process.stderr.write(`✖ npm test -- --times ${timesTo}: its directory does not exist; nothing was run\n`);
  process.exit(2);
}
const files = args.filter((a, i) => !a.startsWith('--') && !(timesAt >= 0 && i === timesAt + 1));
/** How many of the slowest test files the end of a full run prints. */
const SLOWEST = 20;

function step(title: string, command: string, commandArgs: string[]): void {
  process.stdout.write(`\n▶ ${title}\n`);
  const t0 = performance.now();
  const r = spawnSync(command, commandArgs, { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`✖ ${title} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status ?? 1);
  }
  process.stdout.write(`✔ ${title} (${((performance.now() - t0) / 1000).toFixed(1)} s)\n`);
}

step('type check', bin('tsc'), ['--noEmit', '-p', 'tsconfig.json']);
step('lint and format', bin('biome'), ['check', '.']);

const UNIT = [
  'packages/*/src/**/*.test.ts',
  'operators/*/src/**/*.test.ts',
  'operators/*/chaos/**/*.test.ts',
  'bench/src/**/*.test.ts',
  'test/**/*.test.ts',
  'scripts/**/*.test.ts',
  'tools/*/src/**/*.test.ts',
];
const INTEGRATION = [
  'packages/*/test/**/*.test.ts',
  'operators/*/test/**/*.test.ts',
  'tools/*/test/**/*.test.ts',
  'bench/test/**/*.test.ts',
  'examples/**/*.test.ts',
];

// The control-plane binaries, the pinned helm (the Helm chart's test) and the offline validator (unit tests use it
// too: their kinds' CEL rules) are made ready here, not inside a test's time; side by side, because on a new machine
// all three are Go builds, and each leaves a core idle while it downloads modules and links.
const needBinaries = !unitOnly && files.length === 0;
process.stdout.write(
  `\n▶ ${needBinaries ? 'control-plane binaries, helm and ' : ''}the offline validator (@opkit/testenv/cel)\n`,
);
const [, , built] = await Promise.all([
  needBinaries ? resolveBinaries() : undefined,
  needBinaries ? resolveHelm({ pinned: true }) : undefined,
  prepareValidator({ log: (line) => process.stdout.write(`[offline validator] ${line}\n`) }),
]);
process.stdout.write(`✔ Kubernetes ${built.kubernetesVersion} validation, built by ${built.goVersion}\n`);

const TEST_ARGS = ['--test', '--test-reporter=spec', '--test-concurrency=1', '--test-timeout=900000'];
if (files.length > 0 || unitOnly) {
  step('tests', process.execPath, [...TEST_ARGS, ...(files.length > 0 ? files : UNIT)]);
} else {
  const expand = (patterns: readonly string[]) => patterns.flatMap((p) => globSync(p, { cwd: ROOT })).sort();
  const integration = expand(INTEGRATION);
  const unit = expand(UNIT);
  const missing = [...TIMED, ...ALONE, ...LONGEST].filter((f) => !integration.includes(f) && !unit.includes(f));
  if (missing.length > 0) {
    process.stderr.write(`✖ scripts/lanes.ts names test files that do not exist: ${missing.join(', ')}\n`);
    process.exit(1);
  }
  const first = [...unit.filter((f) => !ALONE.includes(f)), ...integration.filter(firstLane)];
  const rest = integration.filter((f) => !firstLane(f) && !ALONE.includes(f));
  const queue = [...LONGEST.filter((f) => rest.includes(f)), ...rest.filter((f) => !LONGEST.includes(f))];
  process.stdout.write(
    `\n▶ tests: ${ALONE.length + first.length} files in the first lane (${ALONE.length} of them first), then ` +
      `${queue.length} shared by both lanes (the second lane's report is printed when the first lane ended)\n`,
  );
  const t0 = performance.now();
  const lanes = await runLanes(
    ROOT,
    [
      { runs: [ALONE, first], args: TEST_ARGS, niceness: 0 },
      { runs: [], args: TEST_ARGS, niceness: BULK_NICENESS },
    ],
    { queue },
  );
  const { failed, times } = lanes;
  process.stdout.write(`\n▶ ${slowest(times, SLOWEST, ROOT).join('\n  ')}\n`);
  if (timesTo !== undefined) {
    const json = JSON.stringify(
      times.map((t) => ({ ...t, file: relative(ROOT, t.file) })),
      null,
      2,
    );
    try {
      writeFileSync(timesTo, `${json}\n`);
      process.stdout.write(`each test file's time: ${timesTo}\n`);
    } catch (err) {
      process.stderr.write(
        `✖ --times: cannot write ${timesTo} (${(err as Error).message}); the tests decide the exit\n`,
      );
    }
  }
  const took = ((performance.now() - t0) / 1000).toFixed(1);
  if (failed) {
    process.stderr.write(`✖ tests failed (${took} s)\n`);
    process.exit(1);
  }
  process.stdout.write(`✔ tests (${took} s)\n`);
}
