/**
 * @module mirror
 * Writes the binaries this machine has into a directory laid out as `OPKIT_DOWNLOAD_MIRROR` expects: each upstream
 * URL `https://HOST/PATH` (see `release.ts`) at `DIR/HOST/PATH`, with the digests where upstream publishes them.
 * Serve DIR with any static file server and point `OPKIT_DOWNLOAD_MIRROR` at it.
 *
 * Guarantees:
 * - Only files upstream publishes, in their upstream form: Kubernetes binaries with a `.sha256` holding the digest
 *   alone; etcd as `etcd-<v>-<os>-<arch>.tar.gz` holding `etcd-<v>-<os>-<arch>/etcd`, listed in `SHA256SUMS`; kwok as
 *   `kwok-<os>-<arch>`; and for etcd and kwok GitHub's releases API answer at
 *   `DIR/api.github.com/repos/<owner>/<repo>/releases/tags/<v>`, listing the written asset with `name`, `size`,
 *   `digest` (`sha256:<hex>`), `state`, `content_type` and `browser_download_url` (the fields opkit and most clients
 *   read; GitHub's answer has more).
 * - An existing `SHA256SUMS` keeps its lines for other files, and an existing API answer its other assets; the entry of
 *   the written artifact is replaced.
 * - Every file is written under a temporary name and renamed into place, so a server never serves half a file.
 * Caveat: the digests are of the binaries given (a build from Go differs from the official release's bytes); the
 * mirror is self-consistent, not a copy of upstream.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { c as createTar } from 'tar';
import type { BinaryPaths } from './binaries.ts';
import { diskError } from './download.ts';
import { type GitHubReleaseAsset, mirrorPath, type ReleasePlatform, releaseArtifact } from './release.ts';
import { COMPONENT_NAMES, type ComponentName } from './versions.ts';

/** One artifact `writeMirror` wrote. */
export interface MirrorEntry {
  /** The component it holds. */
  readonly component: ComponentName;
  /** Path of the artifact inside the mirror directory. */
  readonly path: string;
  /** Its SHA-256, as written into its checksum file. */
  readonly sha256: string;
}

/** Writes every component of `paths` (kubectl when present) into `dir` for `platform`. */
export async function writeMirror(dir: string, paths: BinaryPaths, platform: ReleasePlatform): Promise<MirrorEntry[]> {
  const entries: MirrorEntry[] = [];
  try {
    await mkdir(dir, { recursive: true });
    for (const component of COMPONENT_NAMES) {
      const source = paths[component];
      if (!source) continue;
      const artifact = releaseArtifact(component, platform);
      const target = join(dir, mirrorPath(artifact.url));
      await mkdir(dirname(target), { recursive: true });
      const partial = `${target}.partial-${process.pid}`;
      if (artifact.member) await tarGz(source, artifact.member, partial);
      else await copyFile(source, partial);
      const sha256 = await digest(partial);
      await rename(partial, target);
      if (artifact.checksumUrl) {
        const sums = join(dir, mirrorPath(artifact.checksumUrl));
        if (artifact.checksumUrl.endsWith(`${artifact.fileName}.sha256`)) {
          await atomicWrite(sums, `${sha256}\n`);
        } else {
          const kept = (await readFile(sums, 'utf8').catch(() => ''))
            .split('\n')
            .filter((l) => l.trim() && !l.trim().endsWith(` ${artifact.fileName}`));
          kept.push(`${sha256}  ${artifact.fileName}`);
          await atomicWrite(sums, `${kept.join('\n')}\n`);
        }
      }
      if (artifact.github)
        await writeReleaseAnswer(dir, artifact.github, artifact.url, sha256, (await stat(target)).size);
      entries.push({ component, path: mirrorPath(artifact.url), sha256 });
    }
  } catch (err) {
    throw diskError(err, dir) ?? err;
  }
  return entries;
}

/** A gzip'd tar holding `source` at `member` (mode 0755), as the upstream archive does. */
async function tarGz(source: string, member: string, out: string): Promise<void> {
  const work = await mkdtemp(join(dirname(out), '.opkit-mirror-'));
  try {
    await mkdir(join(work, dirname(member)), { recursive: true });
    await copyFile(source, join(work, member));
    await createTar({ gzip: true, file: out, cwd: work, portable: true }, [member]);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * Adds `asset` to the mirror's copy of GitHub's releases API answer at `DIR/api.github.com/…/releases/tags/<tag>`,
 * keeping the other assets of an existing answer.
 */
async function writeReleaseAnswer(
  dir: string,
  github: GitHubReleaseAsset,
  url: string,
  sha256: string,
  size: number,
): Promise<void> {
  const file = join(dir, mirrorPath(github.apiUrl));
  await mkdir(dirname(file), { recursive: true });
  const tag = github.apiUrl.slice(github.apiUrl.lastIndexOf('/') + 1);
  const repo = new URL(github.apiUrl).pathname.split('/').slice(2, 4).join('/');
  let assets: unknown[] = [];
  try {
    const existing: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (typeof existing === 'object' && existing !== null && 'assets' in existing && Array.isArray(existing.assets))
      assets = existing.assets.filter(
        (a: unknown) => !(typeof a === 'object' && a !== null && 'name' in a && a.name === github.asset),
      );
  } catch {
    // no answer yet (or not one of ours): start a new one
  }
  assets.push({
    name: github.asset,
    state: 'uploaded',
    content_type: 'application/octet-stream',
    size,
    digest: `sha256:${sha256}`,
    browser_download_url: url,
  });
  const answer = { tag_name: tag, name: tag, html_url: `https://github.com/${repo}/releases/tag/${tag}`, assets };
  await atomicWrite(file, `${JSON.stringify(answer, null, 2)}\n`);
}

async function digest(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

async function atomicWrite(file: string, text: string): Promise<void> {
  const partial = `${file}.partial-${process.pid}`;
  await writeFile(partial, text);
  await rename(partial, file);
}
