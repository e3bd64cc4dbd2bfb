/*
 * The expected URLs are the projects' published layouts:
 * - Kubernetes: https://kubernetes.io/docs/tasks/tools/install-kubectl-linux/ downloads
 *   `https://dl.k8s.io/release/<version>/bin/linux/amd64/kubectl` and `kubectl.sha256` beside it (a file holding the
 *   digest alone); the server binaries share that directory (release notes' "Server binaries").
 * - etcd: the release notes of every etcd release (e.g. https://github.com/etcd-io/etcd/releases/tag/v3.6.0) download
 *   `${GITHUB_URL}/${ETCD_VER}/etcd-${ETCD_VER}-linux-amd64.tar.gz` with GITHUB_URL
 *   https://github.com/etcd-io/etcd/releases/download and extract it with --strip-components=1 (one top directory);
 *   the release lists SHA256SUMS.
 * - kwok: kubernetes-sigs/kwok hack/releases.sh uploads `${binary}-${os}-${arch}` to the GitHub release and nothing
 *   else beside it (no checksum file).
 * - GitHub's REST API, "Get a release by tag name": `GET /repos/{owner}/{repo}/releases/tags/{tag}` answers the
 *   release with `assets[]`, each with `name`, `size`, `browser_download_url` and `digest` ("sha256:<hex>", or null for
 *   assets uploaded before GitHub began computing digests in June 2025). Requests send
 *   `Accept: application/vnd.github+json` and `X-GitHub-Api-Version: 2022-11-28`, as its docs show.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  mirrored,
  mirrorPath,
  parseChecksumFile,
  parseReleaseDigest,
  releaseArtifact,
  releasePlatform,
} from './release.ts';

const amd64 = { os: 'linux', arch: 'amd64' } as const;

test('Kubernetes binaries and their .sha256 follow dl.k8s.io/release/<v>/bin/<os>/<arch>/<name>', () => {
  const a = releaseArtifact('kube-apiserver', amd64);
  assert.equal(a.url, 'https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kube-apiserver');
  assert.equal(a.checksumUrl, 'https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kube-apiserver.sha256');
  assert.equal(a.member, undefined);
  assert.equal(
    releaseArtifact('kubectl', { os: 'linux', arch: 'arm64' }).url,
    'https://dl.k8s.io/release/v1.37.2/bin/linux/arm64/kubectl',
  );
});

test('etcd comes from its GitHub release archive, checked against SHA256SUMS of the same release', () => {
  const a = releaseArtifact('etcd', amd64);
  assert.equal(a.url, 'https://github.com/etcd-io/etcd/releases/download/v3.5.35/etcd-v3.5.35-linux-amd64.tar.gz');
  assert.equal(a.checksumUrl, 'https://github.com/etcd-io/etcd/releases/download/v3.5.35/SHA256SUMS');
  assert.equal(a.fileName, 'etcd-v3.5.35-linux-amd64.tar.gz');
  assert.equal(a.member, 'etcd-v3.5.35-linux-amd64/etcd');
  assert.deepEqual(a.github, {
    apiUrl: 'https://api.github.com/repos/etcd-io/etcd/releases/tags/v3.5.35',
    asset: 'etcd-v3.5.35-linux-amd64.tar.gz',
  });
});

test("kwok is its GitHub release binary kwok-<os>-<arch>, with the digest of GitHub's releases API", () => {
  const a = releaseArtifact('kwok', { os: 'linux', arch: 'arm64' });
  assert.equal(a.url, 'https://github.com/kubernetes-sigs/kwok/releases/download/v0.8.0/kwok-linux-arm64');
  assert.equal(a.checksumUrl, undefined, 'kwok publishes no checksum file');
  assert.deepEqual(a.github, {
    apiUrl: 'https://api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v0.8.0',
    asset: 'kwok-linux-arm64',
  });
  assert.equal(
    mirrored(a.github?.apiUrl ?? '', 'http://127.0.0.1:8080'),
    'http://127.0.0.1:8080/api.github.com/repos/kubernetes-sigs/kwok/releases/tags/v0.8.0',
    "the API's answer is mirrored like every other URL",
  );
});

test("a release answer's digest: only sha256:<64 hex> of the named asset counts", () => {
  const hex = 'C'.repeat(64);
  const answer = (assets: unknown) => JSON.stringify({ tag_name: 'v0.8.0', assets });
  assert.deepEqual(
    parseReleaseDigest(answer([{ name: 'kwok-linux-amd64', digest: `sha256:${hex}` }]), 'kwok-linux-amd64'),
    {
      hex: hex.toLowerCase(),
    },
  );
  const problem = (text: string) => {
    const r = parseReleaseDigest(text, 'kwok-linux-amd64');
    return 'problem' in r ? r.problem : assert.fail(`no problem in ${text}`);
  };
  assert.match(
    problem(answer([{ name: 'kwok-linux-arm64', digest: `sha256:${hex}` }])),
    /lists no asset named kwok-linux-amd64 \(it lists only kwok-linux-arm64\)/,
  );
  assert.match(problem(answer([])), /it lists no assets/);
  assert.match(problem(answer([{ name: 'kwok-linux-amd64', digest: null }])), /without a digest/);
  assert.match(problem(answer([{ name: 'kwok-linux-amd64' }])), /without a digest/);
  assert.match(
    problem(answer([{ name: 'kwok-linux-amd64', digest: `md5:${'a'.repeat(32)}` }])),
    /not a SHA-256 digest/,
  );
  assert.match(problem(answer([{ name: 'kwok-linux-amd64', digest: 42 }])), /the digest 42, not a SHA-256 digest/);
  assert.match(problem('[]'), /holds no "assets" list/);
  assert.match(problem('not json'), /is not JSON/);
});

test('a mirror base maps https://HOST/PATH to <base>/HOST/PATH', () => {
  const url = 'https://dl.k8s.io/release/v1.37.2/bin/linux/amd64/kube-apiserver.sha256';
  assert.equal(mirrored(url, undefined), url);
  assert.equal(
    mirrored(url, 'http://127.0.0.1:8080/mirror/'),
    'http://127.0.0.1:8080/mirror/dl.k8s.io/release/v1.37.2/bin/linux/amd64/kube-apiserver.sha256',
  );
  assert.equal(
    mirrorPath('https://github.com/etcd-io/etcd/releases/download/v3.5.35/SHA256SUMS'),
    'github.com/etcd-io/etcd/releases/download/v3.5.35/SHA256SUMS',
  );
});

test('release binaries exist for linux amd64 and arm64 only', () => {
  assert.deepEqual(releasePlatform('linux', 'x64'), amd64);
  assert.deepEqual(releasePlatform('linux', 'arm64'), { os: 'linux', arch: 'arm64' });
  assert.equal(releasePlatform('darwin', 'arm64'), undefined);
  assert.equal(releasePlatform('linux', 'riscv64'), undefined);
});

test('checksum files: a lone digest, or sha256sum lines where only the named file counts', () => {
  const d1 = 'a'.repeat(64);
  const d2 = 'B'.repeat(64);
  assert.equal(parseChecksumFile(`${d1}\n`, 'kube-apiserver', 'sha256'), d1);
  const sums = `${d1}  etcd-v3.5.35-darwin-arm64.zip\n${d2}  etcd-v3.5.35-linux-amd64.tar.gz\n`;
  assert.equal(parseChecksumFile(sums, 'etcd-v3.5.35-linux-amd64.tar.gz', 'sha256'), d2.toLowerCase());
  assert.equal(parseChecksumFile(`${d2} *kwok-linux-amd64\n`, 'kwok-linux-amd64', 'sha256'), d2.toLowerCase());
  assert.equal(parseChecksumFile(sums, 'etcd-v3.5.35-linux-arm64.tar.gz', 'sha256'), undefined);
  assert.equal(parseChecksumFile('<html>not found</html>', 'kubectl', 'sha256'), undefined);
  assert.equal(parseChecksumFile(`${d1}\n`, 'kubectl', 'sha512'), undefined);
});
