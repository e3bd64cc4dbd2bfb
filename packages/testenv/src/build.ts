/**
 * @module build
 * Builds the control-plane binaries from Go modules with the local Go toolchain.
 *
 * Guarantees:
 * - Each component is built into a temporary file and renamed into place, and the set's `manifest.json` is written
 *   last: an interrupted build never leaves a binary that `binaries.ts` would use.
 * - Kubernetes commands are built through a wrapper module that pins every staging module (k8s.io/api,
 *   k8s.io/apiserver, …) to its published v0.Y.Z release, because `go install k8s.io/kubernetes/cmd/…@vX` refuses a
 *   module with replace directives.
 * - Never downloads a Go toolchain (`GOTOOLCHAIN=local`). Module checksums are verified against the checksum
 *   database; only when that database cannot be reached is verification turned off, and the build says so.
 * - Progress is reported through `log`: each step, and every 20 s while Go works a heartbeat with the packages
 *   compiled out of the total the target depends on (`go list -deps`) and an estimate of the time left.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { TestenvError } from './errors.ts';
import { KWOK_EXIT_STAGE } from './kwok-exit-stage.ts';
import { KWOK_STAGES, KWOK_STAGES_VERSION } from './kwok-stages.ts';
import { type CommandResult, runCommand } from './process.ts';
import { COMPONENT_SOURCES, type ComponentName, GO_MINIMUM } from './versions.ts';

export interface BuildOptions {
  /** The Go binary. */
  readonly go: string;
  /** Directory receiving the binaries. */
  readonly binDir: string;
  /** Scratch directory for the wrapper modules. */
  readonly workDir: string;
  readonly components: readonly ComponentName[];
  readonly log: (line: string) => void;
}

export interface BuildReport {
  readonly goVersion: string;
  readonly seconds: Partial<Record<ComponentName, number>>;
  readonly totalSeconds: number;
}

interface GoEnv {
  env: NodeJS.ProcessEnv;
  sumdbOff: boolean;
}

/**
 * A `go` failure because the checksum database could not be reached (then the build is retried without it). The go
 * command exits 1 for every failure, so its stderr is the only signal: like a component's bind failure (component.ts),
 * this is a child process's output, parsed because nothing else tells; no error of testenv is recognised by its text.
 */
const SUMDB_UNREACHABLE =
  /verifying .*(dial tcp|no such host|i\/o timeout|connection refused|network is unreachable|TLS handshake|server misbehaving)/;

export async function buildBinaries(options: BuildOptions): Promise<BuildReport> {
  const started = performance.now();
  const goEnv: GoEnv = {
    env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOWORK: 'off' },
    sumdbOff: false,
  };
  const version = await goOutput(options, goEnv, ['env', 'GOVERSION'], options.workDir);
  await mkdir(options.binDir, { recursive: true });
  const seconds: Partial<Record<ComponentName, number>> = {};
  const groups = new Map<string, ComponentName[]>();
  for (const name of options.components) {
    const src = COMPONENT_SOURCES[name];
    const key = `${src.module}@${src.version}`;
    groups.set(key, [...(groups.get(key) ?? []), name]);
  }
  let index = 0;
  for (const [key, names] of groups) {
    const first = COMPONENT_SOURCES[names[0] as ComponentName];
    const dir = join(options.workDir, key.replaceAll('/', '_'));
    await prepareWrapper(options, goEnv, dir, first.module, first.version, names);
    for (const name of names) {
      index += 1;
      const t0 = performance.now();
      const src = COMPONENT_SOURCES[name];
      const out = join(options.binDir, name);
      const partial = `${out}.partial-${process.pid}`;
      const total = await countPackages(options, goEnv, dir, src.pkg);
      await goStep(
        options,
        goEnv,
        dir,
        `compiling ${name} ${src.version} (${index}/${options.components.length})`,
        ['build', '-v', '-trimpath', '-ldflags', ldflags(src.module, src.version), '-o', partial, src.pkg],
        total,
      );
      await rename(partial, out);
      seconds[name] = round((performance.now() - t0) / 1000);
      options.log(`built ${name} in ${seconds[name]} s`);
    }
  }
  if (options.components.includes('kwok')) await writeKwokStages(options.binDir);
  return { goVersion: version.trim(), seconds, totalSeconds: round((performance.now() - started) / 1000) };
}

/**
 * Builds one Go command, `pkg` of `module@version`, into `out` through a wrapper module in `workDir` (for tools beside
 * the control plane, such as helm). The same guarantees as `buildBinaries`: written to a temporary file and renamed,
 * no toolchain download, checksums verified unless the database cannot be reached, progress through `log`.
 */
export async function buildGoCommand(options: {
  readonly go: string;
  readonly workDir: string;
  readonly module: string;
  readonly version: string;
  readonly pkg: string;
  readonly out: string;
  readonly ldflags: string;
  readonly log: (line: string) => void;
}): Promise<{ goVersion: string; seconds: number }> {
  const started = performance.now();
  const goEnv: GoEnv = {
    env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOWORK: 'off' },
    sumdbOff: false,
  };
  const build: BuildOptions = {
    go: options.go,
    binDir: '',
    workDir: options.workDir,
    components: [],
    log: options.log,
  };
  const version = await goOutput(build, goEnv, ['env', 'GOVERSION'], options.workDir);
  const dir = join(options.workDir, `${options.module}@${options.version}`.replaceAll('/', '_'));
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'go.mod'),
    `// generated by opkit — do not edit\nmodule opkit.local/build\n\ngo ${GO_MINIMUM}.0\n`,
  );
  await goStep(build, goEnv, dir, `resolving ${options.module} ${options.version}`, [
    'get',
    `${options.pkg}@${options.version}`,
  ]);
  const total = await countPackages(build, goEnv, dir, options.pkg);
  const partial = `${options.out}.partial-${process.pid}`;
  await goStep(
    build,
    goEnv,
    dir,
    `compiling ${options.pkg} ${options.version}`,
    ['build', '-v', '-trimpath', '-ldflags', options.ldflags, '-o', partial, options.pkg],
    total,
  );
  await rename(partial, options.out);
  return { goVersion: version.trim(), seconds: round((performance.now() - started) / 1000) };
}

/**
 * Builds the Go main package in `dir` (a module of its own, with its go.mod and go.sum, which the build never changes)
 * into `out`, for `goos`/`goarch` (default: this machine's). The same guarantees as `buildBinaries`: written to a temporary file and renamed, no
 * toolchain download, checksums verified unless the database cannot be reached, progress through `log`.
 */
export async function buildGoSources(options: {
  readonly go: string;
  readonly dir: string;
  readonly out: string;
  readonly what: string;
  readonly goos?: string;
  readonly goarch?: string;
  readonly log: (line: string) => void;
}): Promise<{ goVersion: string; seconds: number }> {
  const started = performance.now();
  const target = options.goos ? { GOOS: options.goos, GOARCH: options.goarch ?? '' } : {};
  // -mod=readonly: the module's go.mod and go.sum are tracked files, never rewritten by a build
  const goEnv: GoEnv = {
    env: { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOWORK: 'off', ...target },
    sumdbOff: false,
  };
  const build: BuildOptions = { go: options.go, binDir: '', workDir: options.dir, components: [], log: options.log };
  const version = await goOutput(build, goEnv, ['env', 'GOVERSION'], options.dir);
  const total = await countPackages(build, goEnv, options.dir, '.');
  const partial = `${options.out}.partial-${process.pid}`;
  await mkdir(dirname(options.out), { recursive: true });
  await goStep(
    build,
    goEnv,
    options.dir,
    `compiling ${options.what}`,
    ['build', '-v', '-trimpath', '-ldflags', '-s -w', '-o', partial, '.'],
    total,
  );
  await rename(partial, options.out);
  return { goVersion: version.trim(), seconds: round((performance.now() - started) / 1000) };
}

export const KWOK_STAGES_FILE = 'kwok-stages.yaml';

/**
 * The text of `kwok-stages.yaml`: kwok's standard stages of the pinned kwok module (see `kwok-stages.ts`), then
 * testenv's own (`kwok-exit-stage.ts`: Job pods annotated with an exit code fail).
 */
export function kwokStagesText(): string {
  return `# generated by opkit from ${COMPONENT_SOURCES.kwok.module}@${KWOK_STAGES_VERSION} — do not edit\n${KWOK_STAGES}---\n${KWOK_EXIT_STAGE}`;
}

/**
 * Writes `kwok-stages.yaml` into `binDir`, beside the kwok binary: kwok ≥ 0.8 starts only with stages configured.
 * The stages are `kwokStagesText()`, so no Go is needed to write them.
 */
export async function writeKwokStages(binDir: string): Promise<void> {
  const out = join(binDir, KWOK_STAGES_FILE);
  const partial = `${out}.partial-${process.pid}`;
  await writeFile(partial, kwokStagesText());
  await rename(partial, out);
}

/** True when `binDir` holds a `kwok-stages.yaml` with exactly `kwokStagesText()` (not one of an older testenv). */
export async function kwokStagesCurrent(binDir: string): Promise<boolean> {
  const text = await readFile(join(binDir, KWOK_STAGES_FILE), 'utf8').catch(() => undefined);
  return text === kwokStagesText();
}

/** Writes the wrapper go.mod (with staging replaces for Kubernetes) and resolves the packages to build. */
async function prepareWrapper(
  options: BuildOptions,
  goEnv: GoEnv,
  dir: string,
  module: string,
  version: string,
  names: readonly ComponentName[],
): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const lines = ['// generated by opkit — do not edit', 'module opkit.local/build', '', `go ${GO_MINIMUM}.0`, ''];
  if (module === 'k8s.io/kubernetes') {
    const info = await goStep(options, goEnv, dir, `downloading ${module} ${version}`, [
      'mod',
      'download',
      '-json',
      `${module}@${version}`,
    ]);
    const goModPath = (JSON.parse(info.stdout) as { GoMod?: string }).GoMod;
    if (!goModPath) throw new TestenvError('BuildFailed', `go mod download printed no GoMod path for ${module}`);
    const staging = stagingModules(await readFile(goModPath, 'utf8'));
    const minor = version.replace(/^v1\./, 'v0.');
    lines.push('replace (', ...staging.map((m) => `\t${m} => ${m} ${minor}`), ')', '');
  }
  await writeFile(join(dir, 'go.mod'), lines.join('\n'));
  await goStep(options, goEnv, dir, `resolving modules for ${names.join(', ')}`, [
    'get',
    ...new Set([module, ...names.map((n) => COMPONENT_SOURCES[n].pkg)].map((p) => `${p}@${version}`)),
  ]);
}

/** The staging modules named by `k8s.io/<name> => ./staging/...` replace lines of k8s.io/kubernetes's go.mod. */
export function stagingModules(goMod: string): string[] {
  const found = new Set<string>();
  for (const match of goMod.matchAll(/^\s*(?:replace\s+)?(k8s\.io\/[\w.-]+)\s*=>\s*\.\/staging\//gm)) {
    found.add(match[1] as string);
  }
  return [...found].sort();
}

function ldflags(module: string, version: string): string {
  const flags = ['-s', '-w'];
  if (module === 'k8s.io/kubernetes') {
    const [major, minor] = version.replace(/^v/, '').split('.');
    const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
      flags.push(
        `-X ${pkg}.gitVersion=${version}`,
        `-X ${pkg}.gitMajor=${major}`,
        `-X ${pkg}.gitMinor=${minor}`,
        `-X ${pkg}.gitTreeState=clean`,
        `-X ${pkg}.buildDate=${date}`,
      );
    }
  } else if (module === 'sigs.k8s.io/kwok') {
    flags.push(`-X sigs.k8s.io/kwok/pkg/consts.Version=${version}`);
  }
  return flags.join(' ');
}

async function goOutput(options: BuildOptions, goEnv: GoEnv, args: string[], cwd: string): Promise<string> {
  await mkdir(cwd, { recursive: true });
  const result = await runCommand(options.go, args, { cwd, env: goEnv.env });
  if (result.code !== 0) throw goFailure(`go ${args.join(' ')}`, result);
  return result.stdout;
}

/** Runs one go command with a heartbeat; retries once without checksum-database access if it was unreachable. */
async function goStep(
  options: BuildOptions,
  goEnv: GoEnv,
  cwd: string,
  what: string,
  args: string[],
  /** For `go build -v`: the packages the target depends on, to report how many are compiled. */
  packages?: number,
): Promise<CommandResult> {
  const t0 = performance.now();
  let downloads = 0;
  let compiled = 0;
  options.log(`${what}…`);
  const heartbeat = setInterval(() => {
    const s = (performance.now() - t0) / 1000;
    const extra = downloads > 0 ? `, ${downloads} modules downloaded` : '';
    options.log(`  …${what}: ${packages ? buildProgress(compiled, packages, s) : `${Math.round(s)} s`}${extra}`);
  }, 20_000);
  try {
    for (;;) {
      const result = await runCommand(options.go, args, {
        cwd,
        env: goEnv.env,
        onStderrLine: (line) => {
          if (line.startsWith('go: downloading')) downloads += 1;
          else if (packages && PACKAGE_LINE.test(line)) compiled += 1;
        },
      });
      if (result.code === 0) return result;
      if (!goEnv.sumdbOff && result.stderrTail.some((l) => SUMDB_UNREACHABLE.test(l))) {
        options.log('the Go checksum database cannot be reached from here: continuing with GOSUMDB=off');
        goEnv.sumdbOff = true;
        goEnv.env = { ...goEnv.env, GOSUMDB: 'off' };
        continue;
      }
      throw goFailure(`go ${args.join(' ')}`, result);
    }
  } finally {
    clearInterval(heartbeat);
  }
}

/** A line `go build -v` prints for each package it compiles: an import path alone. */
const PACKAGE_LINE = /^[\w.~-]+(\/[\w.~-]+)*$/;

/** How many packages `pkg` depends on (itself and the standard library included), or undefined when go cannot say. */
async function countPackages(
  options: BuildOptions,
  goEnv: GoEnv,
  dir: string,
  pkg: string,
): Promise<number | undefined> {
  const result = await runCommand(options.go, ['list', '-deps', pkg], { cwd: dir, env: goEnv.env });
  if (result.code !== 0) return undefined;
  const count = result.stdout.split('\n').filter((l) => l.trim()).length;
  return count > 0 ? count : undefined;
}

/**
 * The progress of a build: packages compiled of the total, and the time left at the rate so far. Packages already in
 * Go's build cache are not compiled again, so a warm build ends before the count reaches the total.
 */
export function buildProgress(compiled: number, total: number, elapsedSeconds: number): string {
  const done = Math.min(compiled, total);
  const head = `${done} of ${total} packages compiled (${Math.floor((done / total) * 100)}%), ${Math.round(elapsedSeconds)} s`;
  if (done === 0 || done >= total) return head;
  const left = ((total - done) * elapsedSeconds) / done;
  return `${head}, about ${left >= 90 ? `${Math.round(left / 60)} min` : `${Math.round(left)} s`} left`;
}

function goFailure(command: string, result: CommandResult): TestenvError {
  return new TestenvError(
    'BuildFailed',
    `${command} failed (exit ${result.code ?? result.signal}):\n${result.stderrTail.slice(-25).join('\n')}`,
  );
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
