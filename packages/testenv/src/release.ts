/**
 * @module release
 * Where each component's official release artifact and the checksum file published beside it live, for the pinned
 * versions, and how `OPKIT_DOWNLOAD_MIRROR` rewrites those URLs. Pure: no I/O.
 *
 * Guarantees:
 * - The URLs follow the projects' published layouts:
 *   - Kubernetes: `https://dl.k8s.io/release/<v>/bin/<os>/<arch>/<name>` with `<name>.sha256` beside it (one hex
 *     digest), as Kubernetes' "Install and Set Up kubectl on Linux" page and its release tooling publish them;
 *   - etcd: `https://github.com/etcd-io/etcd/releases/download/<v>/etcd-<v>-<os>-<arch>.tar.gz` holding
 *     `etcd-<v>-<os>-<arch>/etcd`, with `SHA256SUMS` (sha256sum format) in the same release, as etcd's release notes'
 *     install script downloads it;
 *   - kwok: `https://github.com/kubernetes-sigs/kwok/releases/download/<v>/kwok-<os>-<arch>`, as kwok's
 *     `hack/releases.sh` uploads it. kwok publishes no checksum file (that script uploads the binary alone), so the
 *     checksum is looked for at `kwok-<os>-<arch>.sha256`, which only a mirror written by `opkit env mirror` holds;
 *     without it kwok is not downloaded.
 * - With a mirror base, `https://HOST/PATH` becomes `<base>/HOST/PATH`, checksum files included; nothing else changes.
 * - Release binaries exist for linux/amd64 and linux/arm64 only: Kubernetes publishes no server binaries for macOS or
 *   Windows, so `releasePlatform` is undefined elsewhere and those machines use a build from Go or their own binaries.
 */
import { type ComponentName, ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION } from './versions.ts';

/** A platform the official release binaries exist for. */
export interface ReleasePlatform {
  /** The operating system (only Linux has release binaries of every component). */
  readonly os: 'linux';
  /** The CPU architecture, in Go's names. */
  readonly arch: 'amd64' | 'arm64';
}

/** The release platform of this machine, or undefined where no official release binaries exist for every component. */
export function releasePlatform(
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): ReleasePlatform | undefined {
  if (platform !== 'linux') return undefined;
  if (arch === 'x64') return { os: 'linux', arch: 'amd64' };
  if (arch === 'arm64') return { os: 'linux', arch: 'arm64' };
  return undefined;
}

export type ChecksumAlgorithm = 'sha256' | 'sha512';

/** One downloadable component: the artifact, its checksum file, and where the binary sits inside the artifact. */
export interface ReleaseArtifact {
  readonly component: ComponentName;
  /** The upstream URL of the artifact. */
  readonly url: string;
  /** The upstream URL of the checksum file published beside it. */
  readonly checksumUrl: string;
  readonly algorithm: ChecksumAlgorithm;
  /** The file name the checksum file lists the artifact under (files holding a single digest list no name). */
  readonly fileName: string;
  /** For archives (`.tar.gz`): the path of the binary inside it; absent when the artifact is the binary itself. */
  readonly member?: string;
}

const KUBERNETES_COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubectl'] as const;

/** The release artifact of `component` for `platform` at the pinned versions. */
export function releaseArtifact(component: ComponentName, platform: ReleasePlatform): ReleaseArtifact {
  const { os, arch } = platform;
  if ((KUBERNETES_COMPONENTS as readonly string[]).includes(component)) {
    const url = `https://dl.k8s.io/release/${KUBERNETES_VERSION}/bin/${os}/${arch}/${component}`;
    return { component, url, checksumUrl: `${url}.sha256`, algorithm: 'sha256', fileName: component };
  }
  if (component === 'etcd') {
    const base = `etcd-${ETCD_VERSION}-${os}-${arch}`;
    const dir = `https://github.com/etcd-io/etcd/releases/download/${ETCD_VERSION}`;
    return {
      component,
      url: `${dir}/${base}.tar.gz`,
      checksumUrl: `${dir}/SHA256SUMS`,
      algorithm: 'sha256',
      fileName: `${base}.tar.gz`,
      member: `${base}/etcd`,
    };
  }
  const name = `kwok-${os}-${arch}`;
  const url = `https://github.com/kubernetes-sigs/kwok/releases/download/${KWOK_VERSION}/${name}`;
  return { component, url, checksumUrl: `${url}.sha256`, algorithm: 'sha256', fileName: name };
}

/** `https://HOST/PATH` as served by the mirror at `base` (`<base>/HOST/PATH`); the URL itself without a mirror. */
export function mirrored(url: string, base: string | undefined): string {
  if (!base) return url;
  const u = new URL(url);
  return `${base.replace(/\/+$/, '')}/${u.host}${u.pathname}`;
}

/** The path of `url` inside a mirror directory: `HOST/PATH`. */
export function mirrorPath(url: string): string {
  const u = new URL(url);
  return `${u.host}${u.pathname}`;
}

const HEX_LENGTH: Record<ChecksumAlgorithm, number> = { sha256: 64, sha512: 128 };

/**
 * The digest of `fileName` in a checksum file: either a file holding one digest (Kubernetes' `.sha256`), or
 * sha256sum lines `<hex>  <name>` / `<hex> *<name>` (etcd's `SHA256SUMS`), where only the line naming the file counts.
 * Undefined when the file lists no digest of the right length for it.
 */
export function parseChecksumFile(text: string, fileName: string, algorithm: ChecksumAlgorithm): string | undefined {
  const length = HEX_LENGTH[algorithm];
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0 && !l.startsWith('#'));
  for (const line of lines) {
    const [hex, name] = line.split(/\s+\*?/, 2);
    if (!hex || hex.length !== length || !/^[0-9a-fA-F]+$/.test(hex)) continue;
    if (name === undefined ? lines.length === 1 : name.replace(/^\.\//, '') === fileName) return hex.toLowerCase();
  }
  return undefined;
}
