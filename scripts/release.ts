/**
 * `npm run release -- --registry URL [--version X.Y.Z] [--tag TAG] [--dry-run] [--markdown] [--allow-dirty]`: builds,
 * checks and publishes every public package of the repository with one version, each after the packages it depends on.
 *
 * Guarantees: nothing is published unless every check passed for every package first — a clean working tree (unless
 * --allow-dirty), a registry that answers, a version none of the packages has there yet, a fresh build (tsc's output
 * plus what a package ships in dist/ beside it: @opkit/testenv's offline validator, see `DIST_EXTRAS`), a tarball
 * holding exactly what its manifest points at (`npm pack --dry-run`), publint clean, and types that resolve for
 * every export (are-the-types-wrong, ESM profile). `--dry-run` does all of that and prints what would be published
 * (without `--registry` it skips only the registry's checks, and says so); `--markdown` prints it as the package
 * table of docs/releasing.md, which test/releasing.test.ts holds to the plan.
 * Each failure is one line saying what to do. Caveat: a publish the registry refuses midway (after every check
 * passed) leaves the earlier packages published; the message names both sets.
 */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { writeShippedValidation } from '../packages/testenv/src/validation-wasm.ts';
import {
  checkVersion,
  commonVersion,
  contentProblems,
  dirtyTreeProblem,
  entryFiles,
  kB,
  type Manifest,
  packageTable,
  packedCells,
  plannedPackage,
  publishedManifest,
  ReleaseError,
  releaseOrder,
  type Workspace,
} from './release/plan.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

export const RELEASE_HELP = `Usage: npm run release -- --registry URL [options]

Builds, checks and publishes @opkit/testenv, @opkit/runtime, @opkit/cli and create-opkit with one version.

Options:
  --registry URL    where to publish (required but for a dry run; its credentials come from your npm config)
  --version X.Y.Z   the version to publish (default: the packages' version in the repository)
  --tag TAG         the dist-tag (default latest; next for a pre-release)
  --dry-run         check everything and print what would be published; publish nothing
  --markdown        print the packages as the Markdown table of docs/releasing.md
  --allow-dirty     release from a working tree with uncommitted changes (for trials)
`;

function run(command: string, args: readonly string[], cwd: string): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function firstLine(text: string): string {
  return (
    text
      .split('\n')
      .map((l) => l.replace(/^npm (error|ERR!) /, '').trim())
      .find((l) => l.length > 0 && !l.startsWith('code ')) ?? ''
  );
}

/** The repository's workspaces (root package.json `workspaces`), each with its manifest. */
export async function workspaces(): Promise<Workspace[]> {
  const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
  return Promise.all(
    root.workspaces.map(async (dir) => ({
      dir: join(ROOT, dir),
      manifest: JSON.parse(await readFile(join(ROOT, dir, 'package.json'), 'utf8')) as Manifest,
    })),
  );
}

function checkCleanTree(): void {
  const r = run('git', ['status', '--porcelain'], ROOT);
  if (r.status !== 0) throw new ReleaseError('DirtyTree', `git status failed in ${ROOT}: ${firstLine(r.stderr)}`);
  const problem = dirtyTreeProblem(r.stdout);
  if (problem) throw new ReleaseError('DirtyTree', problem);
}

/** The versions of `name` the registry has ([] when it has none); a registry that does not answer is an error. */
function publishedVersions(name: string, registry: string): string[] {
  const r = run('npm', ['view', name, 'versions', '--json', '--registry', registry, '--fetch-retries=0'], ROOT);
  const parsed = (() => {
    try {
      return JSON.parse(r.stdout || 'null') as unknown;
    } catch {
      return undefined;
    }
  })();
  if (r.status === 0) return Array.isArray(parsed) ? parsed.map(String) : parsed ? [String(parsed)] : [];
  const code =
    typeof parsed === 'object' && parsed !== null && 'error' in parsed
      ? String((parsed as { error: { code?: unknown } }).error.code)
      : 'no answer';
  if (code === 'E404') return [];
  throw new ReleaseError(
    'RegistryUnreachable',
    `the registry ${registry} does not answer (${code}): start it or correct --registry; nothing was published`,
  );
}

/**
 * What a package ships in dist/ beside tsc's output, written into its staged dist/ (the package's `prepack` writes the
 * same, so `npm pack` in the package gives the same tarball). @opkit/testenv: `dist/validation/`, the WebAssembly build
 * of the apiserver's validation that `@opkit/testenv/cel` loads (so its users need no Go), built with Go from
 * `go-validation/` into the user cache (the first time, with its compression, takes minutes; then it is cached).
 */
const DIST_EXTRAS: Readonly<Record<string, (dist: string, log: (line: string) => void) => Promise<unknown>>> = {
  '@opkit/testenv': (dist, log) => writeShippedValidation(join(dist, 'validation'), log),
};

interface Packed {
  readonly workspace: Workspace;
  readonly manifest: Manifest;
  readonly tarball: string;
  readonly size: number;
  readonly unpackedSize: number;
  readonly files: number;
}

async function buildAndStage(w: Workspace, version: string, ours: ReadonlySet<string>, stage: string): Promise<Packed> {
  // built in place (the next package's build reads this one's .d.ts through its exports), staged, and removed again
  // when the release ends (see release()): the repository's `opkit` bin never runs a stale build
  await rm(join(w.dir, 'dist'), { recursive: true, force: true });
  const tsc = run(bin('tsc'), ['-p', 'tsconfig.build.json'], w.dir);
  if (tsc.status !== 0)
    throw new ReleaseError('CheckFailed', `${w.manifest.name} does not build: ${firstLine(tsc.stdout + tsc.stderr)}`);
  const dir = join(stage, w.manifest.name.replace('/', '+'));
  await mkdir(dir, { recursive: true });
  await cp(join(w.dir, 'dist'), join(dir, 'dist'), { recursive: true });
  const addToDist = DIST_EXTRAS[w.manifest.name];
  if (addToDist)
    await addToDist(join(dir, 'dist'), (line) => process.stderr.write(`${line}\n`)).catch((e: unknown) => {
      throw new ReleaseError(
        'CheckFailed',
        `${w.manifest.name} cannot stage what it ships in dist/: ${e instanceof Error ? e.message : String(e)}`,
        { cause: e },
      );
    });
  for (const extra of ['README.md', 'LICENSE'])
    await cp(join(w.dir, extra), join(dir, extra)).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOENT') throw e;
    });
  const manifest = publishedManifest(w.manifest, version, ours);
  await writeFile(join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  for (const file of Object.values(manifest.bin ?? {})) await chmod(join(dir, file), 0o755);

  const problems: string[] = [];
  const dry = run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], dir);
  if (dry.status !== 0)
    throw new ReleaseError('CheckFailed', `npm pack --dry-run failed for ${w.manifest.name}: ${firstLine(dry.stderr)}`);
  const [listing] = JSON.parse(dry.stdout) as [{ files: { path: string }[] }];
  problems.push(
    ...contentProblems(
      manifest,
      listing.files.map((f) => f.path),
    ),
  );

  const packed = run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', stage], dir);
  if (packed.status !== 0)
    throw new ReleaseError('CheckFailed', `npm pack failed for ${w.manifest.name}: ${firstLine(packed.stderr)}`);
  const [info] = JSON.parse(packed.stdout) as [
    { filename: string; size: number; unpackedSize: number; entryCount: number },
  ];
  const tarball = join(stage, basename(info.filename));

  const lint = await publint({ pkgDir: dir, pack: 'npm', level: 'warning', strict: true });
  for (const m of lint.messages) problems.push(`publint: ${formatMessage(m, lint.pkg, { color: false }) ?? m.code}`);

  if (manifest.exports) {
    const attw = run(
      bin('attw'),
      [tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', '--no-emoji'],
      stage,
    );
    if (attw.status !== 0)
      problems.push(`are-the-types-wrong: ${firstLine(attw.stdout + attw.stderr)} (run attw ${tarball})`);
  }
  if (problems.length > 0)
    throw new ReleaseError(
      'CheckFailed',
      `${w.manifest.name}@${version} fails its checks; nothing was published:\n  ${problems.join('\n  ')}`,
    );
  return { workspace: w, manifest, tarball, size: info.size, unpackedSize: info.unpackedSize, files: info.entryCount };
}

export async function release(argv: readonly string[], out: (line: string) => void): Promise<void> {
  const { values } = (() => {
    try {
      return parseArgs({
        args: [...argv],
        options: {
          registry: { type: 'string' },
          version: { type: 'string' },
          tag: { type: 'string' },
          'dry-run': { type: 'boolean', default: false },
          markdown: { type: 'boolean', default: false },
          'allow-dirty': { type: 'boolean', default: false },
          help: { type: 'boolean', short: 'h', default: false },
        },
      });
    } catch (e) {
      throw new ReleaseError('Usage', `${(e as Error).message}; run npm run release -- --help`, { cause: e });
    }
  })();
  if (values.help) {
    out(RELEASE_HELP);
    return;
  }
  const dryRun = values['dry-run'];
  if (!values.registry && !dryRun)
    throw new ReleaseError(
      'Usage',
      '--registry URL is required: name the registry to publish to (only a --dry-run may leave it out)',
    );
  let registry: string | undefined;
  try {
    registry = values.registry === undefined ? undefined : new URL(values.registry).href;
  } catch (e) {
    throw new ReleaseError('Usage', `--registry "${values.registry}" is not a URL (e.g. http://127.0.0.1:4873/)`, {
      cause: e,
    });
  }
  if (!values['allow-dirty']) checkCleanTree();
  const order = releaseOrder(await workspaces());
  const version = values.version ? checkVersion(values.version) : commonVersion(order);
  const tag = values.tag ?? (version.includes('-') ? 'next' : 'latest');
  const ours = new Set(order.map((w) => w.manifest.name));

  const taken = registry ? order.filter((w) => publishedVersions(w.manifest.name, registry).includes(version)) : [];
  if (taken.length > 0)
    throw new ReleaseError(
      'AlreadyPublished',
      `${taken.map((w) => `${w.manifest.name}@${version}`).join(', ')} already published on ${registry}: nothing was published; release a new version with --version X.Y.Z`,
    );

  const stage = await mkdtemp(join(tmpdir(), 'opkit-release-'));
  try {
    const packed: Packed[] = [];
    for (const w of order) packed.push(await buildAndStage(w, version, ours, stage));
    out(
      `${dryRun ? 'would publish' : 'publishing'} ${version} (tag ${tag}) to ${registry ?? 'a registry (no --registry: its versions were not checked)'}`,
    );
    if (values.markdown) {
      out(
        packageTable(
          packed.map((p) => ({ ...plannedPackage(p.workspace.manifest, version, ours), ...packedCells(p) })),
        ),
      );
    } else
      for (const p of packed)
        out(
          `  ${`${p.manifest.name}@${version}`.padEnd(28)} ${String(p.files).padStart(3)} files  ${kB(p.size).padStart(9)} packed  ${kB(p.unpackedSize).padStart(9)} unpacked  (${entryFiles(p.manifest).join(', ')})`,
        );
    if (dryRun || registry === undefined) {
      out('dry run: nothing was published');
      return;
    }
    // credentials before the first package: a registry that would refuse us must not get half a release
    const whoami = run('npm', ['whoami', '--registry', registry], stage);
    if (whoami.status !== 0)
      throw new ReleaseError(
        'NotLoggedIn',
        `not logged in to ${registry} (${firstLine(whoami.stderr)}): run npm login --registry ${registry}; nothing was published`,
      );
    const done: string[] = [];
    for (const p of packed) {
      const r = run(
        'npm',
        ['publish', p.tarball, '--registry', registry, '--tag', tag, '--access', 'public', '--ignore-scripts'],
        stage,
      );
      if (r.status !== 0)
        throw new ReleaseError(
          'PublishFailed',
          `${registry} refused ${p.manifest.name}@${version} (${firstLine(r.stderr)}); ${done.length > 0 ? `already published: ${done.join(', ')}` : 'nothing was published'}; the rest was not published`,
        );
      done.push(`${p.manifest.name}@${version}`);
      out(`published ${p.manifest.name}@${version}`);
    }
  } finally {
    await rm(stage, { recursive: true, force: true });
    for (const w of order) await rm(join(w.dir, 'dist'), { recursive: true, force: true });
  }
}

if (import.meta.main) {
  try {
    await release(process.argv.slice(2), (line) => process.stdout.write(`${line}\n`));
  } catch (e) {
    if (!(e instanceof ReleaseError)) throw e;
    process.stderr.write(`release: ${e.message}\n`);
    process.exitCode = e.code === 'Usage' ? 2 : 1;
  }
}
