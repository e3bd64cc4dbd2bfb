/**
 * @module release
 * Where each component's official release artifact and its published digest live, for the pinned versions, and how
 * `OPKIT_DOWNLOAD_MIRROR` rewrites those URLs. Pure: no I/O.
 *
 * Guarantees:
 * - The URLs follow the projects' published layouts:
 *   - Kubernetes: `https://dl.k8s.io/release/<v>/bin/<os>/<arch>/<name>` with `<name>.sha256` beside it (one hex
 *     digest), as Kubernetes' "Install and Set Up kubectl on Linux" page and its release tooling publish them;
 *   - etcd: `https://github.com/etcd-io/etcd/releases/download/<v>/etcd-<v>-<os>-<arch>.tar.gz` holding
 *     `etcd-<v>-<os>-<arch>/etcd`, with `SHA256SUMS` (sha256sum format) in the same release, as etcd's release notes'
 *     install script downloads it; GitHub's releases API lists the same archive with its digest, a second check;
 *   - kwok: `https://github.com/kubernetes-sigs/kwok/releases/download/<v>/kwok-<os>-<arch>`, as kwok's
 *     `hack/releases.sh` uploads it. kwok publishes no checksum file (that script uploads the binary alone); its
 *     digest is the one GitHub's releases API lists for the asset.
 * - GitHub's releases API: `https://api.github.com/repos/<owner>/<repo>/releases/tags/<tag>` answers the release as
 *   JSON whose `assets` each carry `name` and `digest` (`sha256:<hex>`, computed by GitHub when the asset was
 *   uploaded; null for assets uploaded before GitHub computed digests). Only a `sha256:` digest of 64 hex digits of
 *   the named asset counts.
 * - `GITHUB_TOKEN` is sent, as `Authorization: Bearer`, to `https://api.github.com` only: never to a mirror, never to
 *   another host (a redirect to another origin drops it, as fetch does).
 * - With a mirror base, `https://HOST/PATH` becomes `<base>/HOST/PATH` for every URL here, checksum files and the API's
 *   answers included; nothing else changes.
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

/** Where GitHub's releases API lists an artifact: the release's URL in the API and the asset's name in its answer. */
export interface GitHubReleaseAsset {
  /** `https://api.github.com/repos/<owner>/<repo>/releases/tags/<tag>` */
  readonly apiUrl: string;
  readonly asset: string;
}

/**
 * One downloadable component: the artifact, where its digest is published (a checksum file beside it, GitHub's
 * releases API, or both), and where the binary sits inside the artifact. At least one digest source is present.
 */
export interface ReleaseArtifact {
  readonly component: ComponentName;
  /** The upstream URL of the artifact. */
  readonly url: string;
  /** The upstream URL of the checksum file published beside it; absent where the project publishes none (kwok). */
  readonly checksumUrl?: string;
  /** The release in GitHub's releases API, for projects that release on GitHub (etcd, kwok). */
  readonly github?: GitHubReleaseAsset;
  readonly algorithm: ChecksumAlgorithm;
  /** The file name the checksum file lists the artifact under (files holding a single digest list no name). */
  readonly fileName: string;
  /** For archives (`.tar.gz`): the path of the binary inside it; absent when the artifact is the binary itself. */
  readonly member?: string;
}

/** The URL of a release in GitHub's REST API ("Get a release by tag name"). */
export function githubReleaseApiUrl(repo: string, tag: string): string {
  return `https://api.github.com/repos/${repo}/releases/tags/${tag}`;
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
      github: { apiUrl: githubReleaseApiUrl('etcd-io/etcd', ETCD_VERSION), asset: `${base}.tar.gz` },
      algorithm: 'sha256',
      fileName: `${base}.tar.gz`,
      member: `${base}/etcd`,
    };
  }
  const name = `kwok-${os}-${arch}`;
  const url = `https://github.com/kubernetes-sigs/kwok/releases/download/${KWOK_VERSION}/${name}`;
  return {
    component,
    url,
    github: { apiUrl: githubReleaseApiUrl('kubernetes-sigs/kwok', KWOK_VERSION), asset: name },
    algorithm: 'sha256',
    fileName: name,
  };
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

/** The digest GitHub's releases API lists for an asset, or what is wrong with the answer (to follow its URL). */
export type ReleaseDigest = { readonly hex: string } | { readonly problem: string };

/**
 * The SHA-256 of `asset` in an answer of GitHub's releases API (`assets[].name`, `assets[].digest` =
 * `sha256:<64 hex>`). Anything else — not JSON, no `assets`, no such asset, a null digest, another algorithm — is a
 * `problem` naming what was found.
 */
export function parseReleaseDigest(text: string, asset: string): ReleaseDigest {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return { problem: "is not JSON: it is not an answer of GitHub's releases API" };
  }
  const assets = isObject(answer) && Array.isArray(answer.assets) ? answer.assets.filter(isObject) : undefined;
  if (!assets) return { problem: 'holds no "assets" list: it is not an answer of GitHub\'s releases API' };
  const entry = assets.find((a) => a.name === asset);
  if (!entry) {
    const names = assets.map((a) => String(a.name));
    const listed =
      names.length === 0 ? 'no assets' : `only ${names.slice(0, 12).join(', ')}${names.length > 12 ? ', …' : ''}`;
    return { problem: `lists no asset named ${asset} (it lists ${listed})` };
  }
  const digest = entry.digest;
  if (digest === null || digest === undefined) return { problem: `lists ${asset} without a digest` };
  const m = typeof digest === 'string' ? /^sha256:([0-9a-fA-F]{64})$/.exec(digest) : null;
  if (!m?.[1]) {
    return {
      problem: `lists ${asset} with the digest ${JSON.stringify(digest)}, not a SHA-256 digest (sha256:<64 hex digits>)`,
    };
  }
  return { hex: m[1].toLowerCase() };
}

/**
 * The headers of a request to GitHub's releases API at `url`: the media type and API version GitHub documents, and
 * `Authorization: Bearer $GITHUB_TOKEN` only when `url` is `https://api.github.com/…` (never a mirror's URL).
 */
export function githubApiHeaders(url: string, env: NodeJS.ProcessEnv): Record<string, string> {
  const headers: Record<string, string> = {
    accept: 'application/vnd.github+json',
    'x-github-api-version': '2022-11-28',
    'user-agent': 'opkit-testenv',
  };
  const u = new URL(url);
  const token = env.GITHUB_TOKEN?.trim();
  if (token && u.protocol === 'https:' && u.host === 'api.github.com') headers.authorization = `Bearer ${token}`;
  return headers;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
