/**
 * @module scenarios/schema-import
 * What embedding built-in types costs an operator at start-up: the runtime is compiled as it is published (JavaScript,
 * `tsc -p tsconfig.build.json`) into a scratch `node_modules`, and fresh Node processes do, in turn, what an
 * operator's API module does — import `@opkit/runtime` and TypeBox and define a kind (`defineKind`, which builds its
 * CRD): the baseline with a string field; then with `@opkit/runtime/schemas/batch` imported (batch, core and meta) and
 * a `JobTemplateSpecSchema` field; then with every schema entry imported too — each `repeat` times in rotating order.
 * Reported: the time to the defined kind and the resident memory after a GC, as medians, and each against the
 * baseline measured in the same run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { round, type Summary, summarize } from '../stats.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const RUNTIME = join(ROOT, 'packages/runtime');

/** What each process imports, by name. */
type Case = 'baseline' | 'jobTemplate' | 'every';

export interface SchemaImportResult {
  readonly repeat: number;
  /** Median import time (ms) and RSS after GC (MiB) of each case, with the spread. */
  readonly cases: Record<Case, { readonly importMs: Summary; readonly rssMiB: Summary }>;
  /** Each case's median minus the baseline's: what the schemas add. */
  readonly added: Record<Exclude<Case, 'baseline'>, { readonly importMs: number; readonly rssMiB: number }>;
}

/** A fresh process: imports what the case names, defines a kind as an API module does, reports time and RSS. */
const PROBE = `
const t0 = performance.now();
const { defineKind } = await import('@opkit/runtime');
const { Type } = await import('@sinclair/typebox');
const entries = JSON.parse(process.argv[2]);
const modules = [];
for (const e of entries) modules.push(await import(e));
const template = modules[0]?.JobTemplateSpecSchema;
const spec = Type.Object({ schedule: Type.String(), ...(template ? { jobTemplate: template } : {}) });
defineKind({ group: 'batch.example.com', version: 'v1', kind: 'CronJob', plural: 'cronjobs', spec });
const ms = performance.now() - t0;
globalThis.gc();
process.stdout.write(JSON.stringify({ ms, rss: process.memoryUsage().rss }));
`;

/** The runtime as published, in `<dir>/node_modules/@opkit/runtime`, and the schema entries it exports. */
async function installRuntime(dir: string): Promise<string[]> {
  const target = join(dir, 'node_modules/@opkit/runtime');
  await mkdir(target, { recursive: true });
  const tsc = join(ROOT, 'node_modules/.bin/tsc');
  execFileSync(
    tsc,
    ['-p', join(RUNTIME, 'tsconfig.build.json'), '--outDir', join(target, 'dist'), '--sourceMap', 'false'],
    {
      stdio: 'inherit',
    },
  );
  const manifest = await readFile(join(RUNTIME, 'package.json'), 'utf8');
  await writeFile(join(target, 'package.json'), manifest);
  for (const dep of ['@sinclair/typebox', 'js-yaml'])
    await symlink(join(ROOT, 'node_modules', dep), join(dir, 'node_modules', dep)).catch(() => {});
  const exports = Object.keys((JSON.parse(manifest) as { exports: Record<string, unknown> }).exports);
  return exports.filter((e) => e.startsWith('./schemas/')).map((e) => `@opkit/runtime${e.slice(1)}`);
}

export async function schemaImportScenario(options: {
  readonly repeat: number;
  readonly log: (line: string) => void;
}): Promise<SchemaImportResult> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-schema-import-'));
  try {
    options.log('compiling @opkit/runtime as published');
    const every = await installRuntime(dir);
    await writeFile(join(dir, 'probe.mjs'), PROBE);
    const imports: Record<Case, string[]> = {
      baseline: [],
      jobTemplate: ['@opkit/runtime/schemas/batch'],
      every: ['@opkit/runtime/schemas/batch', ...every.filter((e) => !e.endsWith('/batch'))],
    };
    const samples: Record<Case, { ms: number[]; rss: number[] }> = {
      baseline: { ms: [], rss: [] },
      jobTemplate: { ms: [], rss: [] },
      every: { ms: [], rss: [] },
    };
    const order: Case[] = ['baseline', 'jobTemplate', 'every'];
    for (let i = 0; i < options.repeat; i++) {
      for (const c of [...order.slice(i % 3), ...order.slice(0, i % 3)]) {
        const r = spawnSync(process.execPath, ['--expose-gc', 'probe.mjs', JSON.stringify(imports[c])], {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, NODE_OPTIONS: '' },
        });
        if (r.status !== 0) throw new Error(`the ${c} probe failed: ${r.stderr}`);
        const { ms, rss } = JSON.parse(r.stdout) as { ms: number; rss: number };
        samples[c].ms.push(ms);
        samples[c].rss.push(rss / 2 ** 20);
      }
    }
    const cases = Object.fromEntries(
      order.map((c) => [c, { importMs: summarize(samples[c].ms), rssMiB: summarize(samples[c].rss) }]),
    ) as SchemaImportResult['cases'];
    const over = (c: Exclude<Case, 'baseline'>) => ({
      importMs: round(cases[c].importMs.median - cases.baseline.importMs.median, 1),
      rssMiB: round(cases[c].rssMiB.median - cases.baseline.rssMiB.median, 1),
    });
    return { repeat: options.repeat, cases, added: { jobTemplate: over('jobTemplate'), every: over('every') } };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function schemaImportMarkdown(r: SchemaImportResult): string {
  const row = (name: string, c: Case, extra: string) =>
    `| ${name} | ${round(r.cases[c].importMs.median, 1)} | ${round(r.cases[c].rssMiB.median, 1)} | ${extra} |`;
  return [
    `Start-up cost of the built-in types' schemas (median of ${r.repeat} fresh processes each, Node ${process.version}):`,
    '',
    '| an API module that defines a kind and imports | to the kind (ms) | RSS after GC (MiB) | over the baseline |',
    '| --- | --- | --- | --- |',
    row('`@opkit/runtime` and TypeBox (baseline)', 'baseline', '—'),
    row(
      '… and `@opkit/runtime/schemas/batch` (`JobTemplateSpecSchema`)',
      'jobTemplate',
      `+${r.added.jobTemplate.importMs} ms, +${r.added.jobTemplate.rssMiB} MiB`,
    ),
    row(
      '… and every `@opkit/runtime/schemas/*` entry',
      'every',
      `+${r.added.every.importMs} ms, +${r.added.every.rssMiB} MiB`,
    ),
    '',
  ].join('\n');
}
