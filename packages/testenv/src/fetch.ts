/**
 * @module fetch
 * Downloads the components' official release binaries (see `release.ts`) into the binary cache, each verified
 * against the checksum file published beside it, from upstream or from `OPKIT_DOWNLOAD_MIRROR`.
 *
 * Guarantees:
 * - Everything is downloaded and verified in a staging directory beside the cache (same file system); only verified
 *   binaries are renamed into the cache, after every component has been tried, and the staging directory is removed
 *   in any case. The caller writes the manifest afterwards, so a killed fetch never leaves a set that is trusted.
 * - A checksum mismatch, a full disk or an unwritable cache aborts the whole fetch with nothing moved into the cache.
 *   Any other failure of a component (unreachable host, 404, no checksum published, retries exhausted) is reported
 *   per component, so the caller can build just those from Go. Each component's failure names that component's
 *   own URL and cause. Once a host could not be reached (no DNS answer, refused, no route), the later components
 *   served by it are not requested: their failure names their own URL, the host's cause and says it was not requested.
 * - The caller holds the cache's cross-process lock.
 */
import { chmod, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { x as extract } from 'tar';
import { Downloader, type DownloadSettings, diskError, unreachableCause } from './download.ts';
import { isTestenvError, TestenvError } from './errors.ts';
import { mirrored, parseChecksumFile, type ReleasePlatform, releaseArtifact } from './release.ts';
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
  const downloaded: Partial<Record<ComponentName, Downloaded>> = {};
  const failures: Partial<Record<ComponentName, string>> = {};
  try {
    await rm(staging, { recursive: true, force: true });
    await mkdir(staging, { recursive: true }).catch((err: unknown) => {
      throw diskError(err, staging) ?? err;
    });
    const unreachable = new Map<string, string>(); // host → why it cannot be reached: later files from it fail at once
    for (const component of options.components) {
      const artifact = releaseArtifact(component, options.platform);
      const checksumUrl = mirrored(artifact.checksumUrl, mirror);
      const host = new URL(checksumUrl).host;
      const known = unreachable.get(host);
      if (known) {
        failures[component] = `${checksumUrl}: ${known} (not requested: ${host} could not be reached a moment before)`;
        continue;
      }
      try {
        const expected = parseChecksumFile(await downloader.text(checksumUrl), artifact.fileName, artifact.algorithm);
        if (!expected) {
          throw new TestenvError(
            'DownloadFailed',
            `${checksumUrl} lists no ${artifact.algorithm} digest of ${artifact.fileName}`,
          );
        }
        const url = mirrored(artifact.url, mirror);
        const file = join(staging, artifact.member ? `${component}.archive` : component);
        await downloader.file(url, file, { algorithm: artifact.algorithm, hex: expected }, component);
        if (artifact.member) await extractMember(file, artifact.member, join(staging, component), url);
        await chmod(join(staging, component), 0o755);
        downloaded[component] = { url: artifact.url, sha256: expected };
      } catch (err) {
        if (!isTestenvError(err, 'DownloadFailed')) throw err;
        failures[component] = err.message;
        const cause = unreachableCause(err);
        if (cause !== undefined) unreachable.set(host, cause);
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
