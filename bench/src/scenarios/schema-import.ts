/**
 * @module scenarios/schema-import
 * What embedding built-in types costs an operator at start-up: the runtime is compiled as it is published (JavaScript,
 * `tsc -p tsconfig.build.json`) into a scratch `node_modules`, and fresh Node processes do, in turn, what an
 * operator's API module does — import `@opkit/runtime` and TypeBox and define a kind (`defineKind`, which builds and
 * checks its CRD): the baseline with a string field; the same kind with `@opkit/runtime/schemas/batch` imported
 * (batch, core and meta); a kind with a `JobTemplateSpecSchema` field; that with every schema entry imported too —
 * each `repeat` times in rotating order.
 * Reported: the time to the defined kind and the resident memory after a GC, as medians, and each against the
 * baseline measured in the same run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { round, type Summary, summarize } from '../stats.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const RUNTIME = join(ROOT, 'packages/runtime');

/** What each process imports, by name. */
type Case = 'baseline' | 'imported' | 'jobTemplate' | 'every';

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
const template = process.argv[3] === 'embed' ? modules[0]?.JobTemplateSpecSchema : undefined;
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
    [
      '-p',
      join(RUNTIME, 'tsconfig.build.json'),
      '--outDir',
      join(target, 'dist'),
      '--sourceMap',
      'false',
      '--inlineSources',
      'false',
    ],
    {
      stdio: 'inherit',
    },
  );
  const manifest = await readFile(join(RUNTIME, 'package.json'), 'utf8');
  await writeFile(join(target, 'package.json'), manifest);
  const parsed = JSON.parse(manifest) as {
    exports: Record<string, unknown>;
    dependencies: Record<string, string>;
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional?: boolean }>;
  };
  // what npm installs with it: its dependencies and its peers that are not optional
  const peers = Object.keys(parsed.peerDependencies).filter((p) => !parsed.peerDependenciesMeta[p]?.optional);
  for (const dep of [...Object.keys(parsed.dependencies), ...peers]) {
    const from = [join(RUNTIME, 'node_modules', dep), join(ROOT, 'node_modules', dep)].find((d) => existsSync(d));
    if (from === undefined) throw new Error(`${dep}, a dependency of @opkit/runtime, is not installed: run npm ci`);
    await mkdir(dirname(join(dir, 'node_modules', dep)), { recursive: true });
    await symlink(from, join(dir, 'node_modules', dep));
  }
  const exports = Object.keys(parsed.exports);
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
    const batch = '@opkit/runtime/schemas/batch';
    // what each case imports, and whether its kind embeds the job template
    const plan: Record<Case, { imports: string[]; embed: boolean }> = {
      baseline: { imports: [], embed: false },
      imported: { imports: [batch], embed: false },
      jobTemplate: { imports: [batch], embed: true },
      every: { imports: [batch, ...every.filter((e) => e !== batch)], embed: true },
    };
    const order = Object.keys(plan) as Case[];
    const samples = Object.fromEntries(order.map((c) => [c, { ms: [] as number[], rss: [] as number[] }])) as Record<
      Case,
      { ms: number[]; rss: number[] }
    >;
    for (let i = 0; i < options.repeat; i++) {
      for (const c of [...order.slice(i % order.length), ...order.slice(0, i % order.length)]) {
        const { imports, embed } = plan[c];
        const args = ['--expose-gc', 'probe.mjs', JSON.stringify(imports), embed ? 'embed' : 'plain'];
        const r = spawnSync(process.execPath, args, {
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
    const added = { imported: over('imported'), jobTemplate: over('jobTemplate'), every: over('every') };
    return { repeat: options.repeat, cases, added };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function schemaImportMarkdown(r: SchemaImportResult): string {
  const plus = (a: { importMs: number; rssMiB: number }) => `+${a.importMs} ms, +${a.rssMiB} MiB`;
  const row = (name: string, c: Case, extra: string) =>
    `| ${name} | ${round(r.cases[c].importMs.median, 1)} | ${round(r.cases[c].rssMiB.median, 1)} | ${extra} |`;
  return [
    `Start-up cost of the built-in types' schemas (median of ${r.repeat} fresh processes each, Node ${process.version}):`,
    '',
    '| an API module that imports and defines a kind | to the kind (ms) | RSS after GC (MiB) | over the baseline |',
    '| --- | --- | --- | --- |',
    row('`@opkit/runtime` and TypeBox; a kind with a string field (baseline)', 'baseline', '—'),
    row('… and `@opkit/runtime/schemas/batch` imported, the same kind', 'imported', plus(r.added.imported)),
    row('… and a `JobTemplateSpecSchema` field in the kind', 'jobTemplate', plus(r.added.jobTemplate)),
    row('… and every `@opkit/runtime/schemas/*` entry imported', 'every', plus(r.added.every)),
    '',
  ].join('\n');
}
