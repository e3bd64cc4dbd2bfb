/**
 * @module binary-cache
 * The binary cache of the pinned version set (`<cache>/bin/<tag>`): its `manifest.json`, the check that decides
 * whether a cached component can be used, and the records a download or a build leaves.
 *
 * Guarantees:
 * - The manifest is written last, atomically (a rename), after every binary it lists is in place: a directory without
 *   one is leftovers of an interrupted fetch, never a set that is trusted.
 * - A cached component counts only when it is an executable file of the size the manifest records.
 * - A repair (a `previous` manifest) keeps the other components' binaries and records.
 */
import { constants } from 'node:fs';
import { access, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildBinaries } from './build.ts';
import type { FetchResult } from './fetch.ts';
import { cacheRoot } from './paths.ts';
import {
  BINARY_SET_TAG,
  COMPONENT_NAMES,
  type ComponentName,
  ETCD_VERSION,
  KUBERNETES_VERSION,
  KWOK_VERSION,
} from './versions.ts';

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

/** What `checkCache` found. */
export interface CacheCheck {
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
export async function checkCache(cacheDir: string, env: NodeJS.ProcessEnv): Promise<CacheCheck> {
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

/**
 * Builds `components` into the cache and writes its manifest. Without `previous`, a whole set into an emptied
 * directory; with it, a repair that keeps the other binaries and the manifest's other fields.
 */
export async function buildIntoCache(
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

/** Writes the manifest after a download: the downloaded files' sizes, URLs and digests, kept with what was there. */
export async function recordDownloads(
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

/** True when `path` is executable by this process. */
export async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
