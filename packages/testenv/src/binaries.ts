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
 * kwok's stage configuration (`kwok-stages.yaml`) sits beside the kwok binary; both paths write it.
 * When no way is left it fails with a `BinariesMissing` error that names each missing component, says why each way
 * failed and lists every way to provide them; it never returns a set without every required component. A checksum
 * mismatch (`ChecksumMismatch`), a full disk (`DiskFull`) or an unwritable cache (`CacheNotWritable`) fails at once.
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { buildBinaries, KWOK_STAGES_FILE, writeKwokStages } from './build.ts';
import type { DownloadSettings } from './download.ts';
import { diskError } from './download.ts';
import { TestenvError } from './errors.ts';
import { downloadIntoCache, type FetchResult } from './fetch.ts';
import { withLock } from './lock.ts';
import { cacheRoot } from './paths.ts';
import { releasePlatform } from './release.ts';
import {
  BINARY_SET_TAG,
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

/** The binary cache's `manifest.json`: which versions it holds, and how and when they got there. */
export interface CacheManifest {
  /** The Kubernetes version of kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. */
  readonly kubernetes: string;
  /** The etcd version. */
  readonly etcd: string;
  /** The kwok version. */
  readonly kwok: string;
  /** The Go that built components (absent when every component was downloaded). */
  readonly goVersion?: string;
  /** When the set was written (ISO 8601). */
  readonly builtAt: string;
  /** Wall time of the download or build that produced this set (a build is cold when the Go caches were empty). */
  readonly buildSeconds: number;
  /** Wall time of each component's download or build, in seconds. */
  readonly componentSeconds: Partial<Record<ComponentName, number>>;
  /** Size in bytes of each binary as written; a cached binary of another size is fetched again (absent in older caches). */
  readonly files?: Partial<Record<ComponentName, number>>;
  /** Where each component came from: the upstream URL it was downloaded from, or `go` for a build from Go modules. */
  readonly sources?: Partial<Record<ComponentName, string>>;
  /** The verified SHA-256 of each downloaded artifact. */
  readonly sha256?: Partial<Record<ComponentName, string>>;
}

export function defaultLog(line: string): void {
  process.stderr.write(`[opkit testenv] ${line}\n`);
}

/** The cache directory of the pinned version set. */
export function binaryCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'bin', BINARY_SET_TAG);
}

/** The manifest of the binary cache of the pinned versions, or undefined when there is none (or it does not parse). */
export async function readCacheManifest(env: NodeJS.ProcessEnv = process.env): Promise<CacheManifest | undefined> {
  try {
    return JSON.parse(await readFile(join(binaryCacheDir(env), 'manifest.json'), 'utf8')) as CacheManifest;
  } catch {
    return undefined;
  }
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
  const log = options.log ?? defaultLog;
  const explicit = options.binaryDir ?? env.OPKIT_TESTENV_BINARIES;
  if (explicit) {
    const found = await scan(explicit);
    const missing = REQUIRED_COMPONENTS.filter((c) => !found[c]);
    if (missing.length > 0) {
      throw new TestenvError(
        'BinariesMissing',
        `${explicit} (from ${options.binaryDir ? 'the binaryDir option' : 'OPKIT_TESTENV_BINARIES'}) lacks ${missing.join(', ')}: ` +
          'put those executables there, or drop the option to use the cache or a build from Go modules',
      );
    }
    return withStages(toPaths(found), explicit);
  }
  const assets: Partial<Record<ComponentName, string>> = env.KUBEBUILDER_ASSETS
    ? await scan(env.KUBEBUILDER_ASSETS)
    : {};
  const cacheDir = binaryCacheDir(env);
  const needFromCache = (c: ComponentName) => !assets[c] && REQUIRED_COMPONENTS.includes(c);
  let check = await checkCache(cacheDir, env);
  const lacking = () => COMPONENT_NAMES.filter((c) => needFromCache(c) && !check.found[c]);
  if (lacking().length > 0) {
    const go = await findGo(env);
    const source = sourceOf(options, env);
    const platform = releasePlatform();
    const canDownload = source !== 'go' && platform !== undefined;
    const canBuild = go !== undefined && options.build !== false && source !== 'download';
    if (!canDownload && !canBuild) {
      throw new TestenvError(
        'BinariesMissing',
        check.manifest
          ? damagedMessage(cacheDir, lacking(), check.problems, go !== undefined)
          : missingMessage(lacking(), { go: go !== undefined, source, platform: platform !== undefined }, {}, env),
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
      async () => {
        const now = await checkCache(cacheDir, env); // the process we waited for may have fetched or repaired it
        let manifest = now.manifest;
        let broken = manifest ? COMPONENT_NAMES.filter((c) => !now.found[c]) : [...COMPONENT_NAMES];
        if (!broken.some(needFromCache)) return;
        if (!manifest)
          await rm(cacheDir, { recursive: true, force: true }); // leftovers of an interrupted fetch
        else
          log(
            `the binary cache ${cacheDir} lacks ${describe(broken, now.problems)}; fetching ${broken.length === 1 ? 'it' : 'them'} again`,
          );
        let failures: FetchResult['failures'] = {};
        if (canDownload && platform) {
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
          failures = result.failures;
          const got = broken.filter((c) => result.downloaded[c]);
          if (got.length > 0) {
            if (got.includes('kwok')) await writeKwokStages(cacheDir);
            manifest = await recordDownloads(cacheDir, manifest, result);
            log(`downloaded and verified ${got.join(', ')} in ${result.seconds} s`);
          }
          broken = broken.filter((c) => !result.downloaded[c]);
          if (!broken.some(needFromCache)) return;
          if (!canBuild) {
            throw new TestenvError(
              'BinariesMissing',
              missingMessage(
                broken.filter(needFromCache),
                { go: go !== undefined, source, platform: true },
                failures,
                env,
              ),
            );
          }
          for (const c of broken) if (failures[c]) log(`could not download ${c}: ${failures[c]}`);
        }
        if (!go) return; // canBuild holds when no download was possible
        log(
          `building ${broken.join(', ')} from Go modules (Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, ` +
            `kwok ${KWOK_VERSION}) into ${cacheDir}; a cold build of everything takes ${COLD_BUILD_TIME}`,
        );
        const seconds = await buildIntoCache(go, cacheDir, broken, manifest, env, log);
        log(`built ${broken.join(', ')} in ${seconds} s`);
      },
    );
    check = await checkCache(cacheDir, env);
    if (lacking().length > 0) {
      throw new TestenvError('BinariesMissing', damagedMessage(cacheDir, lacking(), check.problems, go !== undefined));
    }
  }
  const cached = check.found;
  if (cached.kwok && !assets.kwok && !(await exists(join(cacheDir, KWOK_STAGES_FILE)))) {
    // a cache written before the stages file existed: add it
    await withLock(`${cacheDir}.lock`, { timeoutMs: 10 * 60_000 }, () => writeKwokStages(cacheDir));
  }
  const merged: Partial<Record<ComponentName, string>> = {};
  for (const c of COMPONENT_NAMES) {
    const path = assets[c] ?? cached[c];
    if (path) merged[c] = path;
  }
  return withStages(toPaths(merged), cacheDir);
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

/**
 * Builds `components` into the cache and writes its manifest. Without `previous`, a whole set into an emptied
 * directory; with it, a repair that keeps the other binaries and the manifest's other fields.
 */
async function buildIntoCache(
  go: string,
  cacheDir: string,
  components: readonly ComponentName[],
  previous: CacheManifest | undefined,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<number> {
  if (previous) for (const c of components) await rm(join(cacheDir, c), { force: true });
  else await rm(cacheDir, { recursive: true, force: true });
  const report = await buildBinaries({ go, binDir: cacheDir, workDir: join(cacheRoot(env), 'build'), components, log });
  await writeManifest(cacheDir, {
    kubernetes: KUBERNETES_VERSION,
    etcd: ETCD_VERSION,
    kwok: KWOK_VERSION,
    builtAt: new Date().toISOString(),
    buildSeconds: report.totalSeconds,
    ...previous,
    goVersion: report.goVersion,
    componentSeconds: { ...previous?.componentSeconds, ...report.seconds },
    files: await fileSizes(cacheDir),
    sources: { ...previous?.sources, ...Object.fromEntries(components.map((c) => [c, 'go'])) },
    sha256: Object.fromEntries(
      Object.entries(previous?.sha256 ?? {}).filter(([c]) => !components.includes(c as ComponentName)),
    ),
  });
  return report.totalSeconds;
}

async function writeManifest(cacheDir: string, manifest: CacheManifest): Promise<void> {
  const tmp = join(cacheDir, `manifest.json.partial-${process.pid}`);
  await writeFile(tmp, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(tmp, join(cacheDir, 'manifest.json'));
}

async function fileSizes(dir: string): Promise<Partial<Record<ComponentName, number>>> {
  const sizes: Partial<Record<ComponentName, number>> = {};
  for (const c of COMPONENT_NAMES) {
    const size = await stat(join(dir, c)).then(
      (s) => s.size,
      () => undefined,
    );
    if (size !== undefined) sizes[c] = size;
  }
  return sizes;
}

interface CacheCheck {
  readonly manifest: CacheManifest | undefined;
  /** The components that are present, executable and of the size the build recorded. */
  readonly found: Partial<Record<ComponentName, string>>;
  /** What is wrong with each component that is not found (only when the manifest exists). */
  readonly problems: Partial<Record<ComponentName, string>>;
}

/**
 * Verifies the cached set: the manifest (written last by a build) must exist, and each component must be an
 * executable file of the size recorded at build time (a cheap check that catches a binary copied from another set).
 */
async function checkCache(cacheDir: string, env: NodeJS.ProcessEnv): Promise<CacheCheck> {
  const manifest = await readCacheManifest(env);
  if (!manifest) return { manifest, found: {}, problems: {} };
  const found: Partial<Record<ComponentName, string>> = {};
  const problems: Partial<Record<ComponentName, string>> = {};
  for (const c of COMPONENT_NAMES) {
    const path = join(cacheDir, c);
    const info = await stat(path).catch(() => undefined);
    const recorded = manifest.files?.[c];
    if (!info) problems[c] = 'missing';
    else if (!info.isFile() || !(await isExecutable(path))) problems[c] = 'not an executable file';
    else if (recorded !== undefined && info.size !== recorded)
      problems[c] = `${info.size} bytes where the build wrote ${recorded}`;
    else found[c] = path;
  }
  return { manifest, found, problems };
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

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
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

/** Writes the manifest after a download: the downloaded files' sizes, URLs and digests, kept with what was there. */
async function recordDownloads(
  cacheDir: string,
  previous: CacheManifest | undefined,
  result: FetchResult,
): Promise<CacheManifest> {
  const got = Object.keys(result.downloaded) as ComponentName[];
  const manifest: CacheManifest = {
    kubernetes: KUBERNETES_VERSION,
    etcd: ETCD_VERSION,
    kwok: KWOK_VERSION,
    builtAt: new Date().toISOString(),
    buildSeconds: result.seconds,
    ...previous,
    componentSeconds: { ...previous?.componentSeconds },
    files: await fileSizes(cacheDir),
    sources: { ...previous?.sources, ...Object.fromEntries(got.map((c) => [c, result.downloaded[c]?.url])) },
    sha256: { ...previous?.sha256, ...Object.fromEntries(got.map((c) => [c, result.downloaded[c]?.sha256])) },
  };
  await writeManifest(cacheDir, manifest);
  return manifest;
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
