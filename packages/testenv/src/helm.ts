/**
 * @module helm
 * Finds a helm binary, in this order:
 * 1. `OPKIT_HELM` (or the `path` option): that file, which must be executable;
 * 2. `helm` on the PATH, unless `pinned` is asked for (tests want the pinned version);
 * 3. the user cache, `<cache>/bin/helm-<version>/helm`, used when its `manifest.json` records the binary's size and
 *    the file still has it;
 * 4. a build of `helm.sh/helm/v3/cmd/helm` at the pinned version from Go modules with the local Go (see
 *    `buildGoCommand`), into the cache, under a cross-process lock: a process that waited finds the cache filled.
 *
 * Guarantees: never returns a path that is not an executable file; a partial build is never used (the binary is
 * renamed into place and the manifest written last); without Go and without helm it fails with a `BinariesMissing`
 * error that lists every way to provide one. A cold build takes a few minutes on 2 cores; it happens once per cache.
 */
import { constants } from 'node:fs';
import { access, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { defaultLog, findGo } from './binaries.ts';
import { buildGoCommand } from './build.ts';
import { TestenvError } from './errors.ts';
import { withLock } from './lock.ts';
import { cacheRoot } from './paths.ts';
import { GO_MINIMUM } from './versions.ts';

/** The helm version built into the cache. */
export const HELM_VERSION = 'v3.22.0';
const HELM_MODULE = 'helm.sh/helm/v3';
const HELM_PKG = 'helm.sh/helm/v3/cmd/helm';

/** Where `resolveHelm` looks for helm. */
export interface HelmOptions {
  /** An explicit helm binary (default `$OPKIT_HELM`). */
  readonly path?: string;
  /** Ignore helm on the PATH: use the cached (or built) pinned version. */
  readonly pinned?: boolean;
  /** The environment to read `OPKIT_HELM`, `OPKIT_CACHE_DIR` and PATH from (default `process.env`). */
  readonly env?: NodeJS.ProcessEnv;
  /** Progress lines of a build (default: stderr with an `[opkit testenv]` prefix). */
  readonly log?: (line: string) => void;
}

interface HelmManifest {
  readonly version: string;
  readonly goVersion: string;
  readonly builtAt: string;
  readonly buildSeconds: number;
  readonly size: number;
}

/** The cache directory of the pinned helm. */
export function helmCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheRoot(env), 'bin', `helm-${HELM_VERSION}`);
}

/**
 * The path of an executable helm: `OPKIT_HELM` (or `path`), helm on the PATH (unless `pinned`), the cached pinned
 * version, or a build of it with the local Go (see the module comment). Fails with `BinariesMissing` listing every way
 * to provide one.
 *
 * @showModuleComment
 */
export async function resolveHelm(options: HelmOptions = {}): Promise<string> {
  const env = options.env ?? process.env;
  const log = options.log ?? defaultLog;
  const explicit = options.path ?? env.OPKIT_HELM;
  if (explicit) {
    if (await isExecutable(explicit)) return explicit;
    throw new TestenvError(
      'BinariesMissing',
      `${explicit} (from ${options.path ? 'the path option' : 'OPKIT_HELM'}) is not an executable file: point it at helm, or unset it`,
    );
  }
  if (!options.pinned) {
    for (const d of (env.PATH ?? '').split(delimiter)) {
      if (d && (await isExecutable(join(d, 'helm')))) return join(d, 'helm');
    }
  }
  const dir = helmCacheDir(env);
  const bin = join(dir, 'helm');
  if (await cached(dir)) return bin;
  const go = await findGo(env);
  if (!go) {
    throw new TestenvError(
      'BinariesMissing',
      `no helm: none in ${dir}${options.pinned ? '' : ' or on the PATH'}, and no Go to build ${HELM_MODULE} ${HELM_VERSION} with — ` +
        `install helm (https://helm.sh/docs/intro/install/), set OPKIT_HELM to a helm binary, or install Go ≥ ${GO_MINIMUM} ` +
        '(OPKIT_GO names a go binary) so opkit builds it once into the cache',
    );
  }
  await mkdir(join(cacheRoot(env), 'bin'), { recursive: true });
  await withLock(
    `${dir}.lock`,
    {
      timeoutMs: 30 * 60_000,
      onWait: (pid) => log(`another process (pid ${pid}) is building helm; waiting for it`),
    },
    async () => {
      if (await cached(dir)) return;
      log(`building helm ${HELM_VERSION} from Go modules into ${dir} (once; a few minutes when Go's caches are cold)`);
      await mkdir(dir, { recursive: true });
      const report = await buildGoCommand({
        go,
        workDir: join(cacheRoot(env), 'build'),
        module: HELM_MODULE,
        version: HELM_VERSION,
        pkg: HELM_PKG,
        out: bin,
        ldflags: `-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}`,
        log,
      });
      const manifest: HelmManifest = {
        version: HELM_VERSION,
        goVersion: report.goVersion,
        builtAt: new Date().toISOString(),
        buildSeconds: report.seconds,
        size: (await stat(bin)).size,
      };
      await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
      log(`built helm ${HELM_VERSION} in ${report.seconds} s`);
    },
  );
  return bin;
}

async function cached(dir: string): Promise<boolean> {
  try {
    const m = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as HelmManifest;
    const bin = join(dir, 'helm');
    return m.version === HELM_VERSION && (await stat(bin)).size === m.size && (await isExecutable(bin));
  } catch {
    return false;
  }
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}
