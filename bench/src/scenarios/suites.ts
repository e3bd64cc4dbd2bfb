/**
 * @module scenarios/suites
 * A user's test suite against its anchor: the kubebuilder book's CronJob tutorial, its tests run as kubebuilder runs
 * them (`go test ./internal/...`: envtest, Ginkgo), and the same operator ported to opkit (bench/peers/opkit-cronjob),
 * its tests run as a user runs them (`npm test`: `opkit generate --check`, then `opkit test` on one shared control
 * plane). Both run on this machine's control-plane binaries (envtest's `KUBEBUILDER_ASSETS` is the testenv binary
 * cache, the same v1.37.2 kube-apiserver and etcd), alternating, after one untimed run of each (Go compiles its test
 * binaries, the pretest records its pass), so both are measured warm. The kubebuilder project is not in this
 * repository: `--kubebuilder DIR` names a checkout's `docs/book/src/cronjob-tutorial/testdata/project`.
 * Goal (issue "test speed"): the opkit suite in ≤ 20 s and faster than kubebuilder's.
 */
import { spawn } from 'node:child_process';
import { existsSync, globSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binaryCacheDir, findGo, resolveBinaries } from '@opkit/testenv';
import { round, type Summary, summarize } from '../stats.ts';

const OPKIT_PROJECT = fileURLToPath(new URL('../../peers/opkit-cronjob/', import.meta.url));
const REPO_BIN = fileURLToPath(new URL('../../../node_modules/.bin/', import.meta.url));
const CLI = fileURLToPath(new URL('../../../packages/cli/src/main.ts', import.meta.url));

/**
 * A directory with the `opkit` command a user's project gets from `@opkit/cli`'s bin, here the workspace's CLI (run
 * from its TypeScript sources, as the rest of the workspace is under `--conditions=@opkit/source`).
 */
export async function opkitBin(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-bench-bin-'));
  await writeFile(join(dir, 'opkit'), `#!/bin/sh\nexec node ${JSON.stringify(CLI)} "$@"\n`);
  await chmod(join(dir, 'opkit'), 0o755);
  return dir;
}

export interface SuiteRun {
  readonly seconds: number;
  readonly tests: number;
  readonly failed: number;
}

export interface SuitesResult {
  readonly opkit: { readonly seconds: Summary; readonly tests: number; readonly files: number };
  readonly kubebuilder: { readonly seconds: Summary; readonly tests: number; readonly packages: number };
  /** opkit's median over kubebuilder's (below 1: opkit's suite is faster). */
  readonly ratio: number;
  readonly goalSeconds: 20;
}

interface Command {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

/** Runs `c`, timing it; its output, exit code and wall time. */
function timed(c: Command): Promise<{ seconds: number; code: number | null; output: string }> {
  const t0 = performance.now();
  const p = spawn(c.cmd, c.args, { cwd: c.cwd, env: c.env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  p.stdout.setEncoding('utf8').on('data', (s: string) => {
    output += s;
  });
  p.stderr.setEncoding('utf8').on('data', (s: string) => {
    output += s;
  });
  return new Promise((resolve, reject) => {
    p.once('error', reject);
    p.once('close', (code) => resolve({ seconds: (performance.now() - t0) / 1000, code, output }));
  });
}

/** The test count and failures of a `node --test` report (its last `ℹ tests` / `ℹ fail` lines). */
export function nodeTestCounts(output: string): { tests: number; failed: number } {
  const last = (key: string) => Number([...output.matchAll(new RegExp(`^ℹ ${key} (\\d+)$`, 'gm'))].at(-1)?.[1] ?? 0);
  return { tests: last('tests'), failed: last('fail') };
}

/**
 * The specs run and failed in Ginkgo's reports (`Ran N of M Specs`, `N Passed | F Failed`), summed over packages;
 * colours (which Ginkgo prints even to a pipe) are ignored.
 */
export function ginkgoCounts(colored: string): { tests: number; failed: number; packages: number } {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the escape sequences of a terminal's colours
  const output = colored.replace(/\x1b\[[0-9;]*m/g, '');
  const ran = [...output.matchAll(/^Ran (\d+) of \d+ Specs/gm)].map((m) => Number(m[1]));
  const failed = [...output.matchAll(/(\d+) Failed \|/g)].reduce((n, m) => n + Number(m[1]), 0);
  return { tests: ran.reduce((a, b) => a + b, 0), failed, packages: ran.length };
}

async function run<N extends { tests: number; failed: number }>(
  c: Command,
  count: (output: string) => N,
  what: string,
) {
  const r = await timed(c);
  const n = count(r.output);
  if (r.code !== 0 || n.failed > 0 || n.tests === 0)
    throw new Error(`${what} failed (exit ${r.code}, ${n.failed} of ${n.tests} failed):\n${r.output.slice(-3000)}`);
  return { seconds: r.seconds, ...n };
}

export async function suitesScenario(o: {
  readonly kubebuilder: string;
  readonly repeat: number;
  readonly log: (line: string) => void;
}): Promise<SuitesResult> {
  if (!existsSync(join(o.kubebuilder, 'internal/controller/suite_test.go')))
    throw new Error(
      `--kubebuilder ${o.kubebuilder}: not the CronJob tutorial project (no internal/controller/suite_test.go); give a kubebuilder checkout's docs/book/src/cronjob-tutorial/testdata/project`,
    );
  const go = await findGo();
  if (!go)
    throw new Error(
      "the kubebuilder suite needs Go (README's Requirements say which; docs/testenv.md, where opkit looks for it)",
    );
  await resolveBinaries({ log: o.log });
  const bin = await opkitBin();
  try {
    return await measure(o, go, bin);
  } finally {
    await rm(bin, { recursive: true, force: true });
  }
}

async function measure(
  o: { readonly kubebuilder: string; readonly repeat: number; readonly log: (line: string) => void },
  go: string,
  bin: string,
): Promise<SuitesResult> {
  const kubebuilder: Command = {
    cmd: go,
    args: ['test', '-count=1', './internal/...', '-v', '-args', '-ginkgo.no-color'],
    cwd: o.kubebuilder,
    env: { ...process.env, KUBEBUILDER_ASSETS: binaryCacheDir(), GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' },
  };
  const opkit: Command = {
    cmd: 'npm',
    args: ['test'],
    cwd: OPKIT_PROJECT,
    env: {
      ...process.env,
      PATH: `${bin}:${REPO_BIN}:${process.env.PATH ?? ''}`,
      NODE_OPTIONS: '--conditions=@opkit/source',
      // a run of its own, as a user's terminal starts it
      OPKIT_TESTENV_SHARED: undefined,
      NODE_TEST_CONTEXT: undefined,
    },
  };
  o.log('warming up: kubebuilder (Go compiles the test binaries) and opkit (the pretest records its pass)…');
  await run(kubebuilder, ginkgoCounts, 'go test ./internal/...');
  await run(opkit, nodeTestCounts, 'npm test');
  const times = { opkit: [] as number[], kubebuilder: [] as number[] };
  let counts = { opkit: 0, kubebuilder: 0, packages: 0 };
  const files = globSync('test/**/*.test.ts', { cwd: OPKIT_PROJECT }).length;
  for (let i = 0; i < o.repeat; i++) {
    const k = await run(kubebuilder, ginkgoCounts, 'go test ./internal/...');
    const p = await run(opkit, nodeTestCounts, 'npm test');
    times.kubebuilder.push(k.seconds);
    times.opkit.push(p.seconds);
    counts = { opkit: p.tests, kubebuilder: k.tests, packages: k.packages };
    o.log(
      `run ${i + 1}/${o.repeat}: kubebuilder ${k.seconds.toFixed(1)} s (${k.tests} specs), opkit ${p.seconds.toFixed(1)} s (${p.tests} tests)`,
    );
  }
  const seconds = (xs: number[]) => {
    const s = summarize(xs);
    return { ...s, median: round(s.median, 1), min: round(s.min, 1), max: round(s.max, 1) };
  };
  const op = seconds(times.opkit);
  const kb = seconds(times.kubebuilder);
  return {
    opkit: { seconds: op, tests: counts.opkit, files },
    kubebuilder: { seconds: kb, tests: counts.kubebuilder, packages: counts.packages },
    ratio: round(op.median / kb.median),
    goalSeconds: 20,
  };
}

export function suitesMarkdown(r: SuitesResult): string {
  return [
    '| suite | tests | wall time, median | spread (min–max) |',
    '| --- | --- | --- | --- |',
    `| kubebuilder's CronJob tutorial, \`go test ./internal/...\` (envtest) | ${r.kubebuilder.tests} specs in ${r.kubebuilder.packages} packages | ${r.kubebuilder.seconds.median} s | ${r.kubebuilder.seconds.min}–${r.kubebuilder.seconds.max} s (n=${r.kubebuilder.seconds.n}) |`,
    `| its opkit port, \`npm test\` (pretest included) | ${r.opkit.tests} tests in ${r.opkit.files} files | ${r.opkit.seconds.median} s | ${r.opkit.seconds.min}–${r.opkit.seconds.max} s (n=${r.opkit.seconds.n}) |`,
    '',
    `opkit / kubebuilder: ${r.ratio}× (goal: opkit ≤ ${r.goalSeconds} s and faster).`,
  ].join('\n');
}
