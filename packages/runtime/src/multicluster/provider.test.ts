import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Client } from '../client/client.ts';
import { silentLogger } from '../logger.ts';
import { type ClusterReport, kubeconfigFolder, staticClusters } from './provider.ts';

const kubeconfig = (server: string) =>
  JSON.stringify({
    clusters: [{ name: 'c', cluster: { server } }],
    users: [{ name: 'u', user: { token: 'secret-token' } }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  });

/** Runs `provider` and returns its reports as they come, and a stop. */
function run(provider: ReturnType<typeof kubeconfigFolder>) {
  const reports: ClusterReport[] = [];
  const stop = new AbortController();
  const done = provider.run({
    report: (r) => reports.push(r),
    signal: stop.signal,
    log: silentLogger,
    hub: {} as Client,
  });
  const next = async (n: number) => {
    for (let i = 0; i < 200 && reports.length < n; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(reports.length >= n, `report ${n} came`);
    return reports[n - 1] as ClusterReport;
  };
  return {
    next,
    stop: async () => {
      stop.abort();
      await done;
    },
  };
}

const summary = (r: ClusterReport) => ({
  clusters: Object.fromEntries([...r.clusters].map(([n, e]) => [n, e.config.server])),
  problems: [...r.problems.keys()],
});

test('a folder of kubeconfigs: each file a cluster named as it, reported again on each change', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fleet-folder-'));
  try {
    await writeFile(join(dir, 'eu-1.kubeconfig'), kubeconfig('https://eu-1.example:6443'));
    await writeFile(join(dir, 'us-2'), kubeconfig('https://us-2.example:6443'));
    await writeFile(join(dir, '.eu-1.kubeconfig.swp'), 'an editor’s file');
    // a Secret mounted as a volume: keys are symlinks into ..data
    await mkdir(join(dir, '..data'));
    await writeFile(join(dir, '..data', 'ap-3'), kubeconfig('https://ap-3.example:6443'));
    await symlink(join('..data', 'ap-3'), join(dir, 'ap-3'));
    const p = run(kubeconfigFolder(dir, { intervalMs: 50 }));
    const first = await p.next(1);
    assert.deepEqual(summary(first), {
      clusters: {
        'ap-3': 'https://ap-3.example:6443',
        'eu-1': 'https://eu-1.example:6443',
        'us-2': 'https://us-2.example:6443',
      },
      problems: [],
    });
    // a changed kubeconfig changes the fingerprint; a bad one and a bad name are problems, named, never engaged
    await writeFile(join(dir, 'eu-1.kubeconfig'), kubeconfig('https://eu-1b.example:6443'));
    await writeFile(join(dir, 'Bad_Name.yaml'), kubeconfig('https://x:1'));
    await writeFile(join(dir, 'broken.yaml'), 'clusters: [');
    await rm(join(dir, 'us-2'));
    let r = await p.next(2);
    for (let n = 3; r.clusters.has('us-2') || !r.problems.has('broken') || !r.problems.has('Bad_Name'); n++)
      r = await p.next(n);
    assert.deepEqual(summary(r), {
      clusters: { 'ap-3': 'https://ap-3.example:6443', 'eu-1': 'https://eu-1b.example:6443' },
      problems: ['Bad_Name', 'broken'],
    });
    assert.notEqual(r.clusters.get('eu-1')?.fingerprint, first.clusters.get('eu-1')?.fingerprint);
    assert.match(r.problems.get('broken') ?? '', /broken\.yaml is not valid YAML/);
    assert.match(r.problems.get('Bad_Name') ?? '', /"Bad_Name" cannot name a cluster/);
    for (const problem of r.problems.values()) assert.doesNotMatch(problem, /secret-token/);
    await p.stop();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a folder that does not exist yet is a problem until it does', async () => {
  const root = await mkdtemp(join(tmpdir(), 'fleet-later-'));
  const dir = join(root, 'clusters');
  try {
    const p = run(kubeconfigFolder(dir, { intervalMs: 30 }));
    assert.match([...(await p.next(1)).problems.values()][0] ?? '', /the folder .*clusters cannot be read: ENOENT/);
    await mkdir(dir);
    await writeFile(join(dir, 'late.yaml'), kubeconfig('https://late.example'));
    let n = 2;
    while (!(await p.next(n)).clusters.has('late')) n++;
    await p.stop();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('static clusters: files read once, bad names refused', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fleet-static-'));
  try {
    await writeFile(join(dir, 'a'), kubeconfig('https://a.example'));
    const p = run(
      staticClusters({
        a: join(dir, 'a'),
        b: {
          server: 'https://b.example',
          auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
          namespace: 'default',
          contextName: 'b',
        },
        NO: join(dir, 'a'),
        missing: join(dir, 'nope'),
      }) as ReturnType<typeof kubeconfigFolder>,
    );
    const r = await p.next(1);
    assert.deepEqual(summary(r), {
      clusters: { a: 'https://a.example', b: 'https://b.example' },
      problems: ['NO', 'missing'],
    });
    await p.stop();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a folder read once that then cannot be read makes the provider fail: the fleet keeps its clusters', async () => {
  const root = await mkdtemp(join(tmpdir(), 'fleet-gone-'));
  const dir = join(root, 'clusters');
  try {
    await mkdir(dir);
    await writeFile(join(dir, 'a.yaml'), kubeconfig('https://a.example'));
    const reports: ClusterReport[] = [];
    const stop = new AbortController();
    const run = kubeconfigFolder(dir, { intervalMs: 30 }).run({
      report: (r) => reports.push(r),
      signal: stop.signal,
      log: silentLogger,
      hub: {} as Client,
    });
    for (let i = 0; i < 100 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await rm(dir, { recursive: true });
    await assert.rejects(run, /the folder .*clusters cannot be read: ENOENT/);
    assert.deepEqual(
      reports.map((r) => [...r.clusters.keys()]),
      [['a']],
      'no report without the clusters',
    );
    stop.abort();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
