/**
 * @module commands/build-js
 * `opkit build --js`: the operator as the image runs it, one JavaScript program in `dist/operator/` (`main.mjs` and
 * the chunks it loads on demand) bundled from `src/main.ts` with esbuild. A Go operator is one binary; a bundled Node
 * operator is the nearest thing: each ES module Node loads costs memory and start-up time of its own, so one file in
 * place of the ~400 modules of the runtime, TypeBox and the operator is about 19 MiB less RSS and 100 ms less to
 * start (docs/benchmarks.md, "What issue 45 changed").
 *
 * Guarantees:
 * - Packages resolve as the running Node resolves them (its `--conditions`); what must stay a package stays one:
 *   `@opentelemetry/api` (one copy shared with the application's tracing SDK, loaded only when tracing is on),
 *   `node-forge` (loaded only to issue certificates) and the optional `@kubernetes/client-node` are left to
 *   `node_modules`, so the image keeps its production dependencies.
 * - Lazy imports stay lazy: each dynamically imported module (the runtime's protobuf decoders, one per API group
 *   version) is a chunk loaded on its first use.
 * - The output folder is replaced only once the bundle is built: a failed build (a syntax or resolution error,
 *   reported with its file and line) leaves the previous bundle as it was. The staging folder of a build that was
 *   interrupted is removed by the next one.
 */
import { mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import { CliError } from '../errors.ts';

/** Where the bundle goes, under the project. */
export const BUNDLE_DIR = join('dist', 'operator');
/** The prefix of the folder a bundle is built in, beside `BUNDLE_DIR`, before it takes its place. */
const STAGING = '.operator-';
/** Packages left to node_modules (see the module comment). */
export const EXTERNAL = ['@opentelemetry/api', 'node-forge', '@kubernetes/client-node'] as const;

/** The `--conditions` this Node runs with (its flags and NODE_OPTIONS), for the bundle to resolve packages alike. */
export function runningConditions(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): string[] {
  const args = [...execArgv, ...nodeOptions.split(/\s+/).filter(Boolean)];
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const m = /^(?:--conditions|-C)=(.+)$/.exec(a);
    if (m) out.push(m[1] as string);
    else if ((a === '--conditions' || a === '-C') && args[i + 1] !== undefined) out.push(args[++i] as string);
  }
  return out;
}

/** Bundles `<dir>/src/main.ts` into `<dir>/dist/operator/`; resolves with the entry file's path. */
export async function bundleOperator(dir: string, out: (line: string) => void): Promise<string> {
  const target = join(dir, BUNDLE_DIR);
  await mkdir(dirname(target), { recursive: true });
  // what an interrupted build left behind
  for (const name of await readdir(dirname(target)))
    if (name.startsWith(STAGING)) await rm(join(dirname(target), name), { recursive: true, force: true });
  const staging = await mkdtemp(join(dirname(target), STAGING));
  try {
    const result = await build({
      absWorkingDir: dir, // errors name files from the project's root
      entryPoints: { main: join('src', 'main.ts') },
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      outdir: staging,
      outExtension: { '.js': '.mjs' },
      conditions: runningConditions(),
      external: [...EXTERNAL],
      // CommonJS dependencies call require(): give the ES module output one
      banner: {
        js: "import { createRequire as __opkitRequire } from 'node:module';\nconst require = __opkitRequire(import.meta.url);",
      },
      sourcemap: 'linked',
      logLevel: 'silent',
      metafile: true,
    });
    await rm(target, { recursive: true, force: true });
    await rename(staging, target);
    const files = Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.mjs')).length;
    out(`bundled src/main.ts into ${relative(dir, target)}/main.mjs (${files} files)`);
    return join(target, 'main.mjs');
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    const errors = (err as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
    const first = errors?.[0];
    const where = first?.location ? `${first.location.file}:${first.location.line}: ` : '';
    throw new CliError('Usage', `bundling src/main.ts failed: ${where}${first?.text ?? String(err)}`, { cause: err });
  }
}
