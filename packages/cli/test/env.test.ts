import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '@opkit/testenv';
import { running } from './fixtures/project.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

function opkit(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 300_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('opkit env', () => {
  const stateRoot = mkdtemp(join(tmpdir(), 'opkit-state-'));
  after(async () => {
    opkit(['env', 'down'], { OPKIT_STATE_DIR: await stateRoot });
    await rm(await stateRoot, { recursive: true, force: true });
  });

  test('up starts a background cluster (with the feature gates asked for) and prints export KUBECONFIG; status and down manage it', async () => {
    const env = { OPKIT_STATE_DIR: await stateRoot };
    const upped = opkit(['env', 'up', '--nodes', '1', '--feature-gates', 'ShardedListAndWatch=true'], env);
    assert.equal(upped.code, 0, upped.stderr + upped.stdout);
    const kubeconfigPath = /^export KUBECONFIG=(.+)$/m.exec(upped.stdout)?.[1];
    assert.ok(kubeconfigPath, upped.stdout);

    const config = JSON.parse(await readFile(kubeconfigPath, 'utf8'));
    const b64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');
    const client = new ApiClient(
      config.clusters[0].cluster.server,
      b64(config.clusters[0].cluster['certificate-authority-data']),
      {
        kind: 'certificate',
        certPem: b64(config.users[0].user['client-certificate-data']),
        keyPem: b64(config.users[0].user['client-key-data']),
      },
    );
    const nodes = await client.must<{ items: unknown[] }>({ path: '/api/v1/nodes' });
    assert.equal(nodes.items.length, 1);
    // the gate is on: a list with a shard selector says which shard it answered
    const range = "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')";
    const path = `/api/v1/namespaces?shardSelector=${encodeURIComponent(range)}`;
    const sharded = await client.must<{ metadata: { shardInfo?: { selector: string } } }>({ path });
    client.close();
    assert.equal(sharded.metadata.shardInfo?.selector, range);

    const again = opkit(['env', 'up', '--feature-gates', 'ShardedListAndWatch=false'], env);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already running/);
    assert.match(again.stdout, /keeps the feature gates it started with/);

    const status = opkit(['env', 'status'], env);
    assert.equal(status.code, 0, status.stdout);
    assert.match(status.stdout, /ready at https:\/\/127\.0\.0\.1:\d+/);
    const pids = [...status.stdout.matchAll(/pid:? (\d+)/g)].map((m) => Number(m[1]));
    assert.ok(pids.length >= 6, status.stdout);

    const down = opkit(['env', 'down'], env);
    assert.equal(down.code, 0);
    assert.match(down.stdout, /stopped/);
    for (const pid of pids) assert.equal(await running(pid), false, `pid ${pid} ended`);
    const gone = opkit(['env', 'status', '--name', 'default'], env);
    assert.equal(gone.code, 3);
    assert.match(gone.stdout, /^cluster "default": not running/);
    const none = opkit(['env', 'status'], env);
    assert.equal(none.code, 3);
    assert.match(none.stdout, /^no local clusters \(start one with: npx opkit env up \[--name NAME\]\)$/m);
  });
});

/** A loopback URL where nothing listens. */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return `http://127.0.0.1:${port}`;
}

test('offline with no binaries and no Go, env up fails at once with the documented one-paragraph error', async () => {
  const cache = await mkdtemp(join(tmpdir(), 'opkit-empty-cache-'));
  const r = opkit(['env', 'up'], {
    OPKIT_CACHE_DIR: cache,
    OPKIT_STATE_DIR: cache,
    OPKIT_GO: join(cache, 'go'),
    KUBEBUILDER_ASSETS: '',
    OPKIT_DOWNLOAD_MIRROR: await closedPort(), // nothing listens there: offline, and no traffic leaves the machine
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^opkit: the local control plane needs etcd, kube-apiserver/);
  assert.match(r.stderr, /OPKIT_TESTENV_BINARIES/);
  assert.match(r.stderr, /OPKIT_DOWNLOAD_MIRROR/);
  assert.match(r.stderr, /ECONNREFUSED/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  await rm(cache, { recursive: true, force: true });
});

test('usage errors exit 2 and name the problem', () => {
  const unknown = opkit(['env', 'frob']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "env frob"/);
  const nodes = opkit(['env', 'up', '--nodes', 'many']);
  assert.equal(nodes.code, 2);
  assert.match(nodes.stderr, /--nodes must be a whole number/);
  const flag = opkit(['env', 'up', '--frob']);
  assert.equal(flag.code, 2);
  assert.match(flag.stderr, /--frob/);
  const gates = opkit(['env', 'up', '--feature-gates', 'ShardedListAndWatch']);
  assert.equal(gates.code, 2);
  assert.match(
    gates.stderr,
    /--feature-gates must be Name=true or Name=false, comma-separated .* got "ShardedListAndWatch"/,
  );
  const gatesDown = opkit(['env', 'down', '--feature-gates', 'A=true']);
  assert.equal(gatesDown.code, 2);
  assert.match(gatesDown.stderr, /--feature-gates applies to opkit env up only/);
  const force = opkit(['env', 'up', '--force']);
  assert.equal(force.code, 2);
  assert.match(force.stderr, /--force applies to opkit env down only/);
  const noDir = opkit(['env', 'mirror']);
  assert.equal(noDir.code, 2);
  assert.match(noDir.stderr, /env mirror needs the directory to write into/);
  const help = opkit(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /env/);
});

test('env mirror DIR writes the binaries and their digests (checksum files, GitHub release answers) in the upstream layout; fetch and build print them', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-mirror-cli-'));
  const bin = join(root, 'bin');
  await mkdir(bin);
  for (const c of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok', 'kubectl']) {
    await writeFile(join(bin, c), `#!/bin/sh\necho ${c}\n`);
    await chmod(join(bin, c), 0o755);
  }
  await writeFile(join(bin, 'kwok-stages.yaml'), '');
  const env = { OPKIT_TESTENV_BINARIES: bin };
  const r = opkit(['env', 'mirror', join(root, 'mirror')], env);
  assert.equal(r.code, 0, r.stderr);
  const k8s = join(root, 'mirror', 'dl.k8s.io', 'release', 'v1.37.2', 'bin', 'linux', 'amd64');
  const sum = createHash('sha256')
    .update(await readFile(join(k8s, 'kube-apiserver')))
    .digest('hex');
  assert.equal(await readFile(join(k8s, 'kube-apiserver.sha256'), 'utf8'), `${sum}\n`);
  const etcd = join(root, 'mirror', 'github.com', 'etcd-io', 'etcd', 'releases', 'download', 'v3.5.35');
  assert.match(
    await readFile(join(etcd, 'SHA256SUMS'), 'utf8'),
    /^[0-9a-f]{64} {2}etcd-v3\.5\.35-linux-amd64\.tar\.gz\n$/,
  );
  // kwok as upstream publishes it: the binary and GitHub's release answer with its digest, no checksum file
  const kwokDir = join(root, 'mirror', 'github.com', 'kubernetes-sigs', 'kwok', 'releases', 'download', 'v0.8.0');
  const kwokSum = createHash('sha256')
    .update(await readFile(join(kwokDir, 'kwok-linux-amd64')))
    .digest('hex');
  assert.equal(await stat(join(kwokDir, 'kwok-linux-amd64.sha256')).catch(() => undefined), undefined);
  const answer = JSON.parse(
    await readFile(
      join(root, 'mirror', 'api.github.com', 'repos', 'kubernetes-sigs', 'kwok', 'releases', 'tags', 'v0.8.0'),
      'utf8',
    ),
  ) as { assets: { name: string; digest: string }[] };
  assert.deepEqual(
    answer.assets.map((a) => [a.name, a.digest]),
    [['kwok-linux-amd64', `sha256:${kwokSum}`]],
  );
  assert.match(r.stdout, /OPKIT_DOWNLOAD_MIRROR/);
  for (const alias of ['fetch', 'build']) {
    const f = opkit(['env', alias], env);
    assert.equal(f.code, 0, f.stderr);
    assert.match(f.stdout, new RegExp(`kube-apiserver\\s+${join(bin, 'kube-apiserver')}`));
  }
  await rm(root, { recursive: true, force: true });
});

/** `opkit args…` as a child process, resolved when it exits (so several can run at once). */
function opkitAsync(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env } });
  const chunks: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (c: string) => chunks.push(c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => chunks.push(c));
  return new Promise((done) => child.once('close', (code) => done({ code, output: chunks.join('') })));
}

test('two env up of one cluster at once: one daemon starts it, the other waits for it and reports it', {
  timeout: 120_000,
}, async () => {
  // binaries that never become ready: the cluster stays "starting", so both callers reach their timeout
  const root = await mkdtemp(join(tmpdir(), 'opkit-twoup-'));
  const bin = join(root, 'bin');
  await mkdir(bin);
  for (const name of ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok']) {
    await writeFile(join(bin, name), `#!${process.execPath}\nsetInterval(() => {}, 1 << 30);\n`);
    await chmod(join(bin, name), 0o755);
  }
  await writeFile(join(bin, 'kwok-stages.yaml'), '');
  const env = { OPKIT_STATE_DIR: join(root, 'state'), OPKIT_TESTENV_BINARIES: bin };
  try {
    const [a, b] = await Promise.all([
      opkitAsync(['env', 'up', '--name', 'twice', '--timeout', '3'], env),
      opkitAsync(['env', 'up', '--name', 'twice', '--timeout', '3'], env),
    ]);
    const both = `${a.output}\n---\n${b.output}`;
    assert.doesNotMatch(both, /not empty|failed to start/, both);
    assert.equal((both.match(/opkit: starting cluster "twice"/g) ?? []).length, 1, both);
    assert.match(both, /another "opkit env up" \(pid \d+\) is starting cluster "twice"; waiting for it/);
    assert.match(both, /cluster "twice" is starting \(daemon of an earlier "opkit env up"\); waiting for it/);
    assert.deepEqual([a.code, b.code], [1, 1], both);
    assert.equal((both.match(/was not ready within 3 s/g) ?? []).length, 2, both);
    const status = opkit(['env', 'status', '--name', 'twice'], env);
    assert.match(status.stdout, /cluster "twice": starting/, 'the shared status file still says starting');
  } finally {
    const down = opkit(['env', 'down', '--name', 'twice'], env);
    assert.equal(down.code, 0, down.stdout + down.stderr);
    await rm(root, { recursive: true, force: true });
  }
});
