/**
 * @module validation-wasm
 * Where the offline validator (`@opkit/testenv/cel`) gets its WebAssembly: the Kubernetes apiserver's own CRD and
 * custom-resource validation, compiled from the Go module in `go-validation/` (pinned to the Kubernetes version the
 * control plane runs) with Go's `wasm_exec.js` from the same toolchain.
 *
 * Guarantees:
 * - A published package carries the build in `dist/validation/` (brotli-compressed, with its manifest): users never
 *   need Go. Only in the repository (where `go-validation/` sits beside the sources, and decides over any build left
 *   in dist/) is it built, with the local Go toolchain, and cached under the user cache directory by the digest of
 *   the Go sources: a changed source is rebuilt, an unchanged one never is, and a cached build serves a machine
 *   without Go. A cache entry that is incomplete or whose manifest is unreadable is built again.
 * - A build is written to temporary files and renamed, its manifest last, under a lock: an interrupted or concurrent
 *   build never leaves a half-written file that would be used.
 */
import { createHash } from 'node:crypto';
import { access, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';
import { findGo } from './binaries.ts';
import { buildGoSources } from './build.ts';
import { TestenvError } from './errors.ts';
import { withLock } from './lock.ts';
import { cacheRoot } from './paths.ts';
import { runCommand } from './process.ts';
import { GO_MINIMUM, KUBERNETES_VERSION } from './versions.ts';

const WASM = 'k8s-validation.wasm';
const COMPRESSED = `${WASM}.br`;
const WASM_EXEC = 'wasm_exec.js';
const MANIFEST = 'manifest.json';

/** What a build of the validator is: recorded beside it. */
export interface ValidationManifest {
  /** The Kubernetes version whose apiserver code it is (the control plane's). */
  readonly kubernetesVersion: string;
  /** The Go toolchain that built it (its `wasm_exec.js` is shipped with it). */
  readonly goVersion: string;
  /** sha256 of the Go sources (go.mod, go.sum, *.go) it was built from. */
  readonly sourceDigest: string;
}

export interface ValidationWasm {
  readonly wasm: Uint8Array;
  readonly wasmExec: string;
  readonly manifest: ValidationManifest;
  /** Where it came from: the package's own copy, the cache, or a build just now. */
  readonly source: 'package' | 'cache' | 'built';
}

/** The Go module of the validator, present in the repository only. */
const SOURCES = fileURLToPath(new URL('../go-validation/', import.meta.url));
/** The shipped build, present in a published package only (dist/validation/ beside dist/cel.js). */
const SHIPPED = fileURLToPath(new URL('./validation/', import.meta.url));

/** The validator's WebAssembly: the package's copy, else (in the repository) the cached or a fresh build. */
export async function validationWasm(log: (line: string) => void): Promise<ValidationWasm> {
  // the sources, when present (the repository), decide: a build left in dist/ by an earlier pack may be older
  const shipped = (await hasSources()) ? undefined : await readManifest(SHIPPED);
  if (shipped) {
    const [compressed, wasmExec] = await Promise.all([
      readFile(join(SHIPPED, COMPRESSED)),
      readFile(join(SHIPPED, WASM_EXEC), 'utf8'),
    ]);
    return { wasm: await promisify(brotliDecompress)(compressed), wasmExec, manifest: shipped, source: 'package' };
  }
  const built = await cachedBuild(log);
  const [wasm, wasmExec] = await Promise.all([
    readFile(join(built.dir, WASM)),
    readFile(join(built.dir, WASM_EXEC), 'utf8'),
  ]);
  return { wasm, wasmExec, manifest: built.manifest, source: built.fresh ? 'built' : 'cache' };
}

/** Makes sure the validator can load (building it, in the repository, if the cache lacks it) without loading it. */
export async function prepareValidation(log: (line: string) => void): Promise<ValidationManifest> {
  if (!(await hasSources())) {
    const shipped = await readManifest(SHIPPED);
    if (shipped) return shipped;
  }
  return (await cachedBuild(log)).manifest;
}

async function hasSources(): Promise<boolean> {
  return access(join(SOURCES, 'go.mod')).then(
    () => true,
    () => false,
  );
}

/**
 * Writes the shipped form of the validator (compressed WebAssembly, `wasm_exec.js`, manifest) into `dest`, building
 * it first if the cache lacks it. For the release, which puts it in `dist/validation/`.
 */
export async function writeShippedValidation(dest: string, log: (line: string) => void): Promise<ValidationManifest> {
  const built = await cachedBuild(log);
  const compressedPath = join(built.dir, COMPRESSED);
  let compressed = await readFile(compressedPath).catch(() => undefined);
  if (!compressed) {
    log('compressing the offline validator (brotli, about a minute)…');
    const wasm = await readFile(join(built.dir, WASM));
    compressed = await promisify(brotliCompress)(wasm, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: 9,
        [constants.BROTLI_PARAM_LGWIN]: 24,
        [constants.BROTLI_PARAM_SIZE_HINT]: wasm.length,
      },
    });
    await writeAtomically(compressedPath, compressed);
  }
  await mkdir(dest, { recursive: true });
  await writeFile(join(dest, COMPRESSED), compressed);
  await writeFile(join(dest, WASM_EXEC), await readFile(join(built.dir, WASM_EXEC)));
  await writeFile(join(dest, MANIFEST), `${JSON.stringify(built.manifest, null, 2)}\n`);
  return built.manifest;
}

async function cachedBuild(
  log: (line: string) => void,
): Promise<{ dir: string; manifest: ValidationManifest; fresh: boolean }> {
  const digest = await sourceDigest().catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT') throw e;
    throw new TestenvError(
      'BinariesMissing',
      `this copy of @opkit/testenv has neither the offline validator (${join(SHIPPED, COMPRESSED)}) nor its Go sources: reinstall @opkit/testenv from the registry`,
      { cause: e },
    );
  });
  const dir = join(cacheRoot(), 'validation', digest.slice(0, 16));
  const cached = await readManifest(dir);
  if (cached?.sourceDigest === digest && (await complete(dir))) return { dir, manifest: cached, fresh: false };
  await mkdir(dir, { recursive: true });
  return withLock(
    join(dir, '.lock'),
    { timeoutMs: 30 * 60_000, onWait: (pid) => log(`waiting for process ${pid}, which is building the validator`) },
    async () => {
      const again = await readManifest(dir);
      if (again?.sourceDigest === digest && (await complete(dir))) return { dir, manifest: again, fresh: false };
      const go = await findGo();
      if (!go) {
        throw new TestenvError(
          'BinariesMissing',
          `the offline validator is not built yet and building it needs Go ${GO_MINIMUM} or later, which was not found (PATH, $GOROOT/bin, /usr/local/go/bin): install Go or set OPKIT_GO`,
        );
      }
      const t0 = performance.now();
      const { goVersion } = await buildGoSources({
        go,
        dir: SOURCES,
        out: join(dir, WASM),
        what: `the offline validator (Kubernetes ${KUBERNETES_VERSION} apiserver validation, WebAssembly)`,
        goos: 'js',
        goarch: 'wasm',
        log,
      });
      const goroot = (await runCommand(go, ['env', 'GOROOT'])).stdout.trim();
      await writeAtomically(join(dir, WASM_EXEC), await readFile(join(goroot, 'lib', 'wasm', WASM_EXEC)));
      const manifest: ValidationManifest = { kubernetesVersion: KUBERNETES_VERSION, goVersion, sourceDigest: digest };
      await writeAtomically(join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
      log(`built the offline validator in ${Math.round((performance.now() - t0) / 1000)} s`);
      return { dir, manifest, fresh: true };
    },
  );
}

/** sha256 over the validator's Go module: every go.mod, go.sum and .go file, by name and content. */
async function sourceDigest(): Promise<string> {
  const names = (await readdir(SOURCES)).filter((n) => n === 'go.mod' || n === 'go.sum' || n.endsWith('.go')).sort();
  const hash = createHash('sha256');
  for (const name of names)
    hash
      .update(`${name}\0`)
      .update(await readFile(join(SOURCES, name)))
      .update('\0');
  return hash.digest('hex');
}

/** The manifest in `dir`, or undefined when it is missing or not one (a cache miss: the build is made again). */
async function readManifest(dir: string): Promise<ValidationManifest | undefined> {
  const text = await readFile(join(dir, MANIFEST), 'utf8').catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const m = JSON.parse(text) as Partial<ValidationManifest>;
    return typeof m.sourceDigest === 'string' &&
      typeof m.goVersion === 'string' &&
      typeof m.kubernetesVersion === 'string'
      ? (m as ValidationManifest)
      : undefined;
  } catch {
    return undefined;
  }
}

/** True when the cached build's files are all there. */
async function complete(dir: string): Promise<boolean> {
  return Promise.all([access(join(dir, WASM)), access(join(dir, WASM_EXEC))]).then(
    () => true,
    () => false,
  );
}

async function writeAtomically(path: string, data: string | Uint8Array): Promise<void> {
  const partial = `${path}.partial-${process.pid}`;
  await writeFile(partial, data);
  await rename(partial, path);
}
