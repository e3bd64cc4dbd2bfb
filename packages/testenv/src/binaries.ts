/**
 * @module binaries
 * Finds the control-plane binaries, in this order:
 * 1. an explicit directory (`binaryDir` option or `OPKIT_TESTENV_BINARIES`): must hold every required component;
 * 2. `KUBEBUILDER_ASSETS` (setup-envtest's layout: etcd, kube-apiserver, kubectl): used for what it holds;
 * 3. the user cache, one directory per pinned version set, used only when its `manifest.json` exists and each
 *    component it must provide is there, executable and of the size recorded when it was written;
 * 4. on linux amd64/arm64, a download of the official release binaries, each verified against the digest its project
 *    publishes (a checksum file, or GitHub's releases API for kwok; see `fetch.ts`), from upstream or
 *    `OPKIT_DOWNLOAD_MIRROR`, into the cache: every component, so these machines need no Go;
 * 5. a build from Go modules with the local Go (see `build.ts`) of what could not be downloaded (other platforms, an
 *    unreachable host, a rate limit), or of everything when the source is `go` (`source` option or
 *    `OPKIT_TESTENV_SOURCE=go`).
 * Steps 4 and 5 run under one cross-process lock on the cache; a process that waited finds the cache filled. A cache
 * with a manifest but a missing or damaged component is repaired the same way: only those components are fetched.
 * kwok's stage configuration (`kwok-stages.yaml`) sits beside the kwok binary; both paths write it. The cache itself
 * (its manifest, the check of each cached binary, the records of a download or build) is binary-cache.ts.
 * When no way is left it fails with a `BinariesMissing` error that names each missing component, says why each way
 * failed and lists every way to provide them; it never returns a set without every required component. A checksum
 * mismatch (`ChecksumMismatch`), a full disk (`DiskFull`) or an unwritable cache (`CacheNotWritable`) fails at once.
 */
import { access, mkdir, rm } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import {
  binaryCacheDir,
  buildIntoCache,
  type CacheCheck,
  type CacheManifest,
  checkCache,
  isExecutable,
  recordDownloads,
} from './binary-cache.ts';
import { KWOK_STAGES_FILE, kwokStagesCurrent, writeKwokStages } from './build.ts';
import type { DownloadSettings } from './download.ts';
import { diskError } from './download.ts';
import { TestenvError } from './errors.ts';
import { downloadIntoCache, type FetchResult } from './fetch.ts';
import { withLock } from './lock.ts';
import { cacheRoot } from './paths.ts';
import { type ReleasePlatform, releasePlatform } from './release.ts';
import {
  COMPONENT_NAMES,
  type ComponentName,
  ETCD_VERSION,
  GO_MINIMUM,
  KUBERNETES_VERSION,
  KWOK_VERSION,
} from './versions.ts';

/** How long a cold build of all six components from Go modules takes (empty Go caches; 422 s and 821 s measured). */
export const COLD_BUILD_TIME = '7 to 14 minutes on 2 cores';

/** Components needed to start an environment; kubectl is a convenience. */
export const REQUIRED_COMPONENTS: readonly ComponentName[] = [
  'etcd',
  'kube-apiserver',
  'kube-controller-manager',
  'kube-scheduler',
  'kwok',
];

/**
 * Absolute paths of the control-plane binaries `resolveBinaries` found (kubectl when available) and of kwok's stage
 * configuration.
 */
export type BinaryPaths = Readonly<Record<Exclude<ComponentName, 'kubectl'>, string>> & {
  readonly kubectl?: string;
  /** kwok's stage configuration (nodes become Ready, pods Running and Ready), beside the kwok binary. */
  readonly kwokStages: string;
};

/** Where `resolveBinaries` looks, and how it fetches what is missing. */
export interface ResolveOptions {
  /** A directory holding every required binary; skips all other sources. */
  readonly binaryDir?: string;
  /** Build missing binaries with Go when found (default true). */
  readonly build?: boolean;
  /**
   * Where missing binaries come from: `auto` (download, then a Go build of what failed), `download` (never Go) or
   * `go` (build from source, no download). Default: `OPKIT_TESTENV_SOURCE`, else `auto`.
   */
  readonly source?: BinarySource;
  /** Download timeouts and retries (defaults in `download.ts`). */
  readonly download?: Partial<DownloadSettings>;
  /** Progress lines (default: stderr with an `[opkit testenv]` prefix). */
  readonly log?: (line: string) => void;
  /**
   * The environment to read `OPKIT_TESTENV_BINARIES`, `KUBEBUILDER_ASSETS`, `OPKIT_CACHE_DIR`, the mirror and PATH from
   * (default `process.env`).
   */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Where missing binaries come from: `auto` (download, then a Go build of what failed), `download` (never Go), `go`
 * (build from source).
 */
export type BinarySource = 'auto' | 'download' | 'go';

/** The default progress log: a line on stderr with an `[opkit testenv]` prefix. */
export function defaultLog(line: string): void {
  process.stderr.write(`[opkit testenv] ${line}\n`);
}

/**
 * The control-plane binaries, from the first source that has them (see the module comment): an explicit directory,
 * `KUBEBUILDER_ASSETS`, the cache, a verified download, or a Go build. Fails with `TestenvError` `BinariesMissing`
 * naming each missing component and every way to provide it.
 *
 * @showModuleComment
 */
export async function resolveBinaries(options: ResolveOptions = {}): Promise<BinaryPaths> {
  const env = options.env ?? process.env;
  const explicit = options.binaryDir ?? env.OPKIT_TESTENV_BINARIES;
  if (explicit) return fromExplicit(explicit, options.binaryDir ? 'the binaryDir option' : 'OPKIT_TESTENV_BINARIES');
  const assets: Partial<Record<ComponentName, string>> = env.KUBEBUILDER_ASSETS
    ? await scan(env.KUBEBUILDER_ASSETS)
    : {};
  const cacheDir = binaryCacheDir(env);
  const needFromCache = (c: ComponentName) => !assets[c] && REQUIRED_COMPONENTS.includes(c);
  let check = await checkCache(cacheDir, env);
  if (COMPONENT_NAMES.some((c) => needFromCache(c) && !check.found[c])) {
    check = await fillCache({ options, env, log: options.log ?? defaultLog, cacheDir, needFromCache }, check);
  }
  const cached = check.found;
  if (cached.kwok && !assets.kwok && !(await kwokStagesCurrent(cacheDir))) {
    // a cache written before the stages file existed, or by a testenv with other stages: (re)write it
    await withLock(`${cacheDir}.lock`, { timeoutMs: 10 * 60_000 }, () => writeKwokStages(cacheDir));
  }
  const merged: Partial<Record<ComponentName, string>> = {};
  for (const c of COMPONENT_NAMES) {
    const path = assets[c] ?? cached[c];
    if (path) merged[c] = path;
  }
  return withStages(toPaths(merged), cacheDir);
}

/** Every required component from the directory `dir` names (`BinariesMissing` when it lacks one). */
async function fromExplicit(dir: string, from: string): Promise<BinaryPaths> {
  const found = await scan(dir);
  const missing = REQUIRED_COMPONENTS.filter((c) => !found[c]);
  if (missing.length > 0) {
    throw new TestenvError(
      'BinariesMissing',
      `${dir} (from ${from}) lacks ${missing.join(', ')}: ` +
        'put those executables there, or drop the option to use the cache or a build from Go modules',
    );
  }
  return withStages(toPaths(found), dir);
}

/** What filling the cache works from. */
interface CacheFill {
  readonly options: ResolveOptions;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
  readonly cacheDir: string;
  /** True for a component that must come from the cache (required, and not in KUBEBUILDER_ASSETS). */
  readonly needFromCache: (c: ComponentName) => boolean;
}

/** How the missing components can be fetched: a download, a Go build, or both. */
interface FetchWays {
  readonly go: string | undefined;
  readonly source: BinarySource;
  readonly platform: ReleasePlatform | undefined;
  readonly canBuild: boolean;
}

/**
 * Downloads or builds, under the cache's lock, what the cache lacks of what is needed from it; returns the cache's
 * check afterwards. `BinariesMissing` when no way can provide them, or they are still missing after.
 */
async function fillCache(fill: CacheFill, before: CacheCheck): Promise<CacheCheck> {
  const { options, env, log, cacheDir, needFromCache } = fill;
  const lacking = (check: CacheCheck) => COMPONENT_NAMES.filter((c) => needFromCache(c) && !check.found[c]);
  const go = await findGo(env);
  const source = sourceOf(options, env);
  const platform = releasePlatform();
  const ways: FetchWays = {
    go,
    source,
    platform: source !== 'go' ? platform : undefined,
    canBuild: go !== undefined && options.build !== false && source !== 'download',
  };
  if (!ways.platform && !ways.canBuild) {
    throw new TestenvError(
      'BinariesMissing',
      before.manifest
        ? damagedMessage(cacheDir, lacking(before), before.problems, go !== undefined)
        : missingMessage(lacking(before), { go: go !== undefined, source, platform: platform !== undefined }, {}, env),
    );
  }
  const binRoot = join(cacheRoot(env), 'bin');
  await mkdir(binRoot, { recursive: true }).catch((err: unknown) => {
    throw diskError(err, binRoot) ?? err;
  });
  await withLock(
    `${cacheDir}.lock`,
    {
      timeoutMs: 90 * 60_000,
      onWait: (pid) => log(`another process (pid ${pid}) is fetching the control-plane binaries; waiting for it`),
    },
    () => fetchLocked(fill, ways),
  );
  const after = await checkCache(cacheDir, env);
  if (lacking(after).length > 0) {
    throw new TestenvError(
      'BinariesMissing',
      damagedMessage(cacheDir, lacking(after), after.problems, go !== undefined),
    );
  }
  return after;
}

/** Under the cache's lock: fetches what is still broken (the process waited for may have fetched or repaired it). */
async function fetchLocked(fill: CacheFill, ways: FetchWays): Promise<void> {
  const { env, log, cacheDir, needFromCache } = fill;
  const now = await checkCache(cacheDir, env);
  let manifest = now.manifest;
  let broken = manifest ? COMPONENT_NAMES.filter((c) => !now.found[c]) : [...COMPONENT_NAMES];
  if (!broken.some(needFromCache)) return;
  if (!manifest)
    await rm(cacheDir, { recursive: true, force: true }); // leftovers of an interrupted fetch
  else
    log(
      `the binary cache ${cacheDir} lacks ${describe(broken, now.problems)}; fetching ${broken.length === 1 ? 'it' : 'them'} again`,
    );
  if (ways.platform) {
    const result = await downloadStep(fill, ways.platform, broken, manifest);
    manifest = result.manifest;
    broken = broken.filter((c) => !result.downloaded[c]);
    if (!broken.some(needFromCache)) return;
    if (!ways.canBuild) {
      throw new TestenvError(
        'BinariesMissing',
        missingMessage(
          broken.filter(needFromCache),
          { go: ways.go !== undefined, source: ways.source, platform: true },
          result.failures,
          env,
        ),
      );
    }
    for (const c of broken) if (result.failures[c]) log(`could not download ${c}: ${result.failures[c]}`);
  }
  if (!ways.go) return; // canBuild holds when no download was possible
  log(
    `building ${broken.join(', ')} from Go modules (Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, ` +
      `kwok ${KWOK_VERSION}) into ${cacheDir}; a cold build of everything takes ${COLD_BUILD_TIME}`,
  );
  const seconds = await buildIntoCache(ways.go, cacheDir, broken, manifest, env, log);
  log(`built ${broken.join(', ')} in ${seconds} s`);
}

/** Downloads `broken` into the cache and records what arrived; returns the fetch's result and the manifest now. */
async function downloadStep(
  fill: CacheFill,
  platform: ReleasePlatform,
  broken: readonly ComponentName[],
  previous: CacheManifest | undefined,
): Promise<FetchResult & { manifest: CacheManifest | undefined }> {
  const { options, env, log, cacheDir } = fill;
  const mirror = env.OPKIT_DOWNLOAD_MIRROR;
  log(
    `downloading ${broken.join(', ')} (Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}) ` +
      `from ${mirror ? `the mirror ${mirror}` : 'the official releases'} into ${cacheDir}, each checked against its published digest`,
  );
  const result = await downloadIntoCache({
    cacheDir,
    components: broken,
    platform,
    env,
    log,
    ...(options.download ? { settings: options.download } : {}),
  });
  const got = broken.filter((c) => result.downloaded[c]);
  if (got.length === 0) return { ...result, manifest: previous };
  if (got.includes('kwok')) await writeKwokStages(cacheDir);
  const manifest = await recordDownloads(cacheDir, previous, result);
  log(`downloaded and verified ${got.join(', ')} in ${result.seconds} s`);
  return { ...result, manifest };
}

/** Adds the path of kwok's stage configuration, which must sit beside the kwok binary. */
async function withStages(paths: Omit<BinaryPaths, 'kwokStages'>, source: string): Promise<BinaryPaths> {
  const stages = join(dirname(paths.kwok), KWOK_STAGES_FILE);
  if (!(await exists(stages))) {
    throw new TestenvError(
      'BinariesMissing',
      `kwok needs its stage configuration ${stages} beside the binary (from ${source}): copy ${KWOK_STAGES_FILE} ` +
        `from ${binaryCacheDir()} (written by \`npx opkit env build\`) into that directory`,
    );
  }
  return { ...paths, kwokStages: stages };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

function describe(names: readonly ComponentName[], problems: Readonly<Partial<Record<ComponentName, string>>>): string {
  return names.map((c) => `${c} (${problems[c] ?? 'missing'})`).join(', ');
}

function damagedMessage(
  cacheDir: string,
  missing: readonly ComponentName[],
  problems: Readonly<Partial<Record<ComponentName, string>>>,
  haveGo: boolean,
): string {
  return (
    `the binary cache ${cacheDir} holds manifest.json but lacks ${describe(missing, problems)}: ` +
    (haveGo
      ? 'run `npx opkit env fetch` to fetch what is missing'
      : 'run `npx opkit env fetch` to download what is missing, or copy the complete directory from a machine where ' +
        'it succeeded') +
    ', or set OPKIT_TESTENV_BINARIES to a directory holding every component'
  );
}

/** The executables of known component names found in `dir`. */
async function scan(dir: string): Promise<Partial<Record<ComponentName, string>>> {
  const found: Partial<Record<ComponentName, string>> = {};
  for (const name of COMPONENT_NAMES) {
    const path = join(dir, name);
    if (await isExecutable(path)) found[name] = path;
  }
  return found;
}

function toPaths(found: Partial<Record<ComponentName, string>>): Omit<BinaryPaths, 'kwokStages'> {
  const { kubectl, ...rest } = found;
  return { ...(rest as Record<Exclude<ComponentName, 'kubectl'>, string>), ...(kubectl ? { kubectl } : {}) };
}

/** The Go binary: `$OPKIT_GO` when set (and only it), else `go` on PATH, `$GOROOT/bin/go`, or /usr/local/go/bin/go. */
export async function findGo(env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env.OPKIT_GO) return (await isExecutable(env.OPKIT_GO)) ? env.OPKIT_GO : undefined;
  const candidates = [
    ...(env.PATH ?? '').split(delimiter).map((d) => (d ? join(d, 'go') : undefined)),
    env.GOROOT ? join(env.GOROOT, 'bin', 'go') : undefined,
    '/usr/local/go/bin/go',
  ];
  for (const c of candidates) if (c && (await isExecutable(c))) return c;
  return undefined;
}

function sourceOf(options: ResolveOptions, env: NodeJS.ProcessEnv): BinarySource {
  const value = options.source ?? (env.OPKIT_TESTENV_SOURCE || 'auto');
  if (value === 'auto' || value === 'download' || value === 'go') return value;
  throw new TestenvError(
    'InvalidOption',
    `OPKIT_TESTENV_SOURCE is "${value}": use "go" (build from source), "download" (never build) or leave it unset`,
  );
}

function missingMessage(
  missing: readonly ComponentName[],
  can: { go: boolean; source: BinarySource; platform: boolean },
  failures: Readonly<Partial<Record<ComponentName, string>>>,
  env: NodeJS.ProcessEnv,
): string {
  const why: string[] = [];
  if (can.source === 'go') why.push('downloads are off (OPKIT_TESTENV_SOURCE=go or source: "go")');
  else if (!can.platform)
    why.push(`no official release binaries exist for ${process.platform}/${process.arch} (only linux amd64 and arm64)`);
  for (const c of missing) if (failures[c]) why.push(`downloading ${c} failed: ${failures[c]}`);
  if (can.source === 'download') why.push('building from source is off (OPKIT_TESTENV_SOURCE=download)');
  else if (!can.go)
    why.push(
      env.OPKIT_GO ? `OPKIT_GO=${env.OPKIT_GO} is not an executable Go` : 'no Go toolchain was found to build them',
    );
  else why.push('building is disabled (build: false)');
  return [
    `the local control plane needs ${missing.join(', ')}, which could not be provided:`,
    ...why.map((w) => `  - ${w};`),
    'Provide them in one of these ways:',
    '  - set OPKIT_DOWNLOAD_MIRROR to a mirror holding the release files under <base>/HOST/PATH (write one with `npx opkit env mirror DIR` on a machine that has them);',
    '  - set OPKIT_TESTENV_BINARIES (or the binaryDir option) to a directory holding every one of them;',
    '  - set KUBEBUILDER_ASSETS to a setup-envtest directory (etcd, kube-apiserver) and provide the rest as above;',
    `  - install Go ≥ ${GO_MINIMUM} (on PATH, in $GOROOT, at /usr/local/go or named by OPKIT_GO) so opkit builds them into ${binaryCacheDir(env)};`,
    '  - or run `npx opkit env fetch` on a machine that can and copy that directory here.',
  ].join('\n');
}
