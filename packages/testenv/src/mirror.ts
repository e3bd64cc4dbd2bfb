/**
 * @module mirror
 * Writes the binaries this machine has into a directory laid out as `OPKIT_DOWNLOAD_MIRROR` expects: each upstream
 * URL `https://HOST/PATH` (see `release.ts`) at `DIR/HOST/PATH`, with the checksum file beside it. Serve DIR with any
 * static file server and point `OPKIT_DOWNLOAD_MIRROR` at it.
 *
 * Guarantees:
 * - Artifacts have the upstream form: Kubernetes binaries as files with a `.sha256` holding the digest alone; etcd as
 *   `etcd-<v>-<os>-<arch>.tar.gz` holding `etcd-<v>-<os>-<arch>/etcd`, listed in `SHA256SUMS`; kwok as
 *   `kwok-<os>-<arch>` with a `kwok-<os>-<arch>.sha256` (which upstream does not publish).
 * - An existing `SHA256SUMS` keeps its lines for other files; the line of the written archive is replaced.
 * - Every file is written under a temporary name and renamed into place, so a server never serves half a file.
 * Caveat: the digests are of the binaries given (a build from Go differs from the official release's bytes); the
 * mirror is self-consistent, not a copy of upstream.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { c as createTar } from 'tar';
import type { BinaryPaths } from './binaries.ts';
import { diskError } from './download.ts';
import { mirrorPath, type ReleasePlatform, releaseArtifact } from './release.ts';
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
