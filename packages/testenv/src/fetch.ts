/**
 * @module fetch
 * Downloads the components' official release binaries (see `release.ts`) into the binary cache, each verified
 * against the digest its project publishes — the checksum file beside it, or the digest GitHub's releases API lists
 * for the release asset — from upstream or from `OPKIT_DOWNLOAD_MIRROR`.
 *
 * Guarantees:
 * - Everything is downloaded and verified in a staging directory beside the cache (same file system); only verified
 *   binaries are renamed into the cache, after every component has been tried, and the staging directory is removed
 *   in any case. The caller writes the manifest afterwards, so a killed fetch never leaves a set that is trusted.
 * - Digests: Kubernetes from its `.sha256` files; kwok from GitHub's releases API (kwok publishes no checksum file);
 *   etcd from its `SHA256SUMS`, and — a second check — from the releases API as well: when both answer they must
 *   agree, and when the API cannot be read (rate limit, unreachable, a mirror without its answer) `SHA256SUMS` alone
 *   counts and a line says so. Each release's API answer is requested once per fetch; `GITHUB_TOKEN` goes to
 *   api.github.com only (see `githubApiHeaders`).
 * - A checksum mismatch (the file against its digest, or `SHA256SUMS` against the API), a full disk or an unwritable
 *   cache aborts the whole fetch with nothing moved into the cache. Any other failure of a component (unreachable
 *   host, 404, no digest published, a rate limit, retries exhausted) is reported per component, so the caller can
 *   build just those from Go. Each component's failure names that component's own URL and cause. Once a host could
 *   not be reached (no DNS answer, refused, no route), the later requests to it are not made: their failure names
 *   their own URL, the host's cause and says it was not requested.
 * - The caller holds the cache's cross-process lock.
 */
import { chmod, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { x as extract } from 'tar';
import { Downloader, type DownloadSettings, diskError, unreachableCause } from './download.ts';
import { isTestenvError, TestenvError } from './errors.ts';
import {
  githubApiHeaders,
  mirrored,
  parseChecksumFile,
  parseReleaseDigest,
  type ReleaseArtifact,
  type ReleasePlatform,
  releaseArtifact,
} from './release.ts';
import type { ComponentName } from './versions.ts';

export interface FetchOptions {
  readonly cacheDir: string;
  readonly components: readonly ComponentName[];
  readonly platform: ReleasePlatform;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
  readonly settings?: Partial<DownloadSettings>;
}

export interface Downloaded {
  /** The upstream URL of the artifact (the mirror serves the same path). */
  readonly url: string;
  /** The verified digest of the artifact. */
  readonly sha256: string;
}

export interface FetchResult {
  readonly downloaded: Partial<Record<ComponentName, Downloaded>>;
  /** Why each component that is not downloaded could not be. */
  readonly failures: Partial<Record<ComponentName, string>>;
  readonly seconds: number;
}

/** The advice that ends a rate-limit failure of GitHub's API, with or without a token. */
export function rateLimitAdvice(env: NodeJS.ProcessEnv, mirror: string | undefined): string {
  if (mirror) return 'The mirror answers for api.github.com: ask its operator, or wait until then';
  return env.GITHUB_TOKEN?.trim()
    ? 'GITHUB_TOKEN is set, and its own limit is used up too: wait until then, or set OPKIT_DOWNLOAD_MIRROR'
    : "Without a token GitHub allows 60 requests an hour per IP address (shared by everyone behind this machine's " +
        'address): set GITHUB_TOKEN to a GitHub token (any, no scopes needed; opkit sends it to api.github.com only), ' +
        'wait until then, or set OPKIT_DOWNLOAD_MIRROR';
}

/** Downloads `components` into `cacheDir`; see the module comment for what is guaranteed. */
export async function downloadIntoCache(options: FetchOptions): Promise<FetchResult> {
  const started = performance.now();
  const { cacheDir, env, log } = options;
  const mirror = env.OPKIT_DOWNLOAD_MIRROR || undefined;
  if (mirror && !/^https?:\/\/[^/]/.test(mirror)) {
    throw new TestenvError(
      'InvalidOption',
      `OPKIT_DOWNLOAD_MIRROR is "${mirror}": set it to the http:// or https:// URL under which the mirror serves HOST/PATH`,
    );
  }
  const staging = `${cacheDir}.download-${process.pid}`;
  const downloader = new Downloader({ env, log, ...(options.settings ? { settings: options.settings } : {}) });
  const releases = new ReleaseFetch(downloader, env, log, mirror);
  const downloaded: Partial<Record<ComponentName, Downloaded>> = {};
  const failures: Partial<Record<ComponentName, string>> = {};
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true }).catch((err: unknown) => {
      throw diskError(err, staging) ?? err;
    });
    for (const component of options.components) {
      try {
        downloaded[component] = await releases.component(releaseArtifact(component, options.platform), staging);
      } catch (err) {
        if (!isTestenvError(err, 'DownloadFailed')) throw err;
        failures[component] = err.message;
      }
    }
    const names = Object.keys(downloaded) as ComponentName[];
    if (names.length > 0) {
      await mkdir(cacheDir, { recursive: true }).catch((err: unknown) => {
        throw diskError(err, cacheDir) ?? err;
      });
      for (const c of names) await rename(join(staging, c), join(cacheDir, c));
    }
  } finally {
    await downloader.close();
    await rm(staging, { recursive: true, force: true });
  }
  return { downloaded, failures, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

/** A published digest, and where it was published (for the messages). */
interface Digest {
  readonly hex: string;
  readonly source: string;
}

/**
 * One fetch's requests: each host found unreachable is not asked again, and each release's API answer is requested
 * once.
 */
class ReleaseFetch {
  readonly #downloader: Downloader;
  readonly #env: NodeJS.ProcessEnv;
  readonly #log: (line: string) => void;
  readonly #mirror: string | undefined;
  /** host → why it cannot be reached: later requests to it fail at once. */
  readonly #unreachable = new Map<string, string>();
  /** Each release's API answer, requested once. */
  readonly #answers = new Map<string, Promise<string>>();

  constructor(downloader: Downloader, env: NodeJS.ProcessEnv, log: (line: string) => void, mirror: string | undefined) {
    this.#downloader = downloader;
    this.#env = env;
    this.#log = log;
    this.#mirror = mirror;
  }

  /** Downloads and verifies `artifact` into `staging` as its component's executable. */
  async component(artifact: ReleaseArtifact, staging: string): Promise<Downloaded> {
    const component = artifact.component;
    const expected = await this.#expectedDigest(artifact);
    const url = mirrored(artifact.url, this.#mirror);
    const file = join(staging, artifact.member ? `${component}.archive` : component);
    await this.#guarded(url, () =>
      this.#downloader.file(url, file, { algorithm: artifact.algorithm, ...expected }, component),
    );
    if (artifact.member) await extractMember(file, artifact.member, join(staging, component), url);
    await chmod(join(staging, component), 0o755);
    return { url: artifact.url, sha256: expected.hex };
  }

  /** Runs one request to `url` unless its host was found unreachable; records the host when it is. */
  async #guarded<T>(url: string, run: () => Promise<T>): Promise<T> {
    const host = new URL(url).host;
    const known = this.#unreachable.get(host);
    if (known) {
      throw new TestenvError(
        'DownloadFailed',
        `${url}: ${known} (not requested: ${host} could not be reached a moment before)`,
      );
    }
    try {
      return await run();
    } catch (err) {
      const cause = isTestenvError(err, 'DownloadFailed') ? unreachableCause(err) : undefined;
      if (cause !== undefined) this.#unreachable.set(host, cause);
      throw err;
    }
  }

  #apiAnswer(url: string): Promise<string> {
    let answer = this.#answers.get(url);
    if (!answer) {
      const env = this.#env;
      answer = this.#guarded(url, () =>
        this.#downloader.text(url, {
          headers: githubApiHeaders(url, env),
          rateLimitAdvice: rateLimitAdvice(env, this.#mirror),
        }),
      );
      answer.catch(() => {}); // awaited by each caller; a failure is theirs to report
      this.#answers.set(url, answer);
    }
    return answer;
  }

  /** The digest in the checksum file published beside `artifact`, when it has one. */
  async #fromChecksumFile(artifact: ReleaseArtifact): Promise<Digest | undefined> {
    if (!artifact.checksumUrl) return undefined;
    const url = mirrored(artifact.checksumUrl, this.#mirror);
    const text = await this.#guarded(url, () => this.#downloader.text(url));
    const hex = parseChecksumFile(text, artifact.fileName, artifact.algorithm);
    if (!hex) {
      throw new TestenvError('DownloadFailed', `${url} lists no ${artifact.algorithm} digest of ${artifact.fileName}`);
    }
    return { hex, source: `the checksum file published beside it (${url})` };
  }

  /** The digest `artifact` must have, and where it was published (see the module comment for the two checks). */
  async #expectedDigest(artifact: ReleaseArtifact): Promise<Digest> {
    const fromFile = await this.#fromChecksumFile(artifact);
    const github = artifact.github;
    if (!github) {
      if (fromFile) return fromFile;
      throw new TestenvError('DownloadFailed', `${artifact.url}: no digest is published for it`);
    }
    const url = mirrored(github.apiUrl, this.#mirror);
    const skipped = (why: string, file: Digest) => {
      this.#log(
        `${artifact.component}: the second check against GitHub's releases API was skipped (${why}); ${file.source} alone counts`,
      );
      return file;
    };
    let found: ReturnType<typeof parseReleaseDigest>;
    try {
      found = parseReleaseDigest(await this.#apiAnswer(url), github.asset);
    } catch (err) {
      if (!fromFile || !isTestenvError(err, 'DownloadFailed')) throw err;
      return skipped(err.message, fromFile);
    }
    if ('problem' in found) {
      if (!fromFile) throw new TestenvError('DownloadFailed', `${url} ${found.problem}`);
      return skipped(`${url} ${found.problem}`, fromFile);
    }
    if (fromFile && found.hex !== fromFile.hex) {
      throw new TestenvError(
        'ChecksumMismatch',
        `${artifact.fileName}: ${fromFile.source} says ${fromFile.hex}, but GitHub's releases API (${url}) says ` +
          `${found.hex}; nothing was downloaded and nothing was cached. The release was changed after it was ` +
          'published, or the mirror serves files of two releases: check OPKIT_DOWNLOAD_MIRROR, or build from ' +
          'source with OPKIT_TESTENV_SOURCE=go',
      );
    }
    const api = `the digest GitHub's releases API lists for it (${url})`;
    return fromFile ? { hex: found.hex, source: `${fromFile.source} and ${api}` } : { hex: found.hex, source: api };
  }
}

/** Extracts `member` of the verified `.tar.gz` `archive` to `dest`, then removes the archive. */
async function extractMember(archive: string, member: string, dest: string, url: string): Promise<void> {
  const dir = `${archive}.d`;
  await mkdir(dir);
  try {
    await extract({ file: archive, cwd: dir, filter: (path) => path.replace(/^\.\//, '') === member });
  } catch (err) {
    throw (
      diskError(err, dir) ??
      new TestenvError('DownloadFailed', `${url} is not a readable .tar.gz archive`, { cause: err })
    );
  }
  const extracted = join(dir, member);
  if (!(await stat(extracted).catch(() => undefined))?.isFile()) {
    throw new TestenvError('DownloadFailed', `${url} holds no ${member}`);
  }
  await rename(extracted, dest);
  await rm(dir, { recursive: true, force: true });
  await rm(archive, { force: true });
}
