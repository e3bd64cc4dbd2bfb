import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  describeRun,
  inUseRefusal,
  isLive,
  liveRuns,
  processStartTicks,
  type RunRecord,
  runCommandLine,
  runsUsing,
} from './runs.ts';

const run = (pid: number, extra: Partial<RunRecord> = {}): RunRecord => ({
  pid,
  started: '2030-01-01T00:00:00.000Z',
  ports: [],
  ...extra,
});

test('runsUsing: the runs on a cluster by its name or its apiserver URL; others and runs without a cluster are not', () => {
  const byName = run(1, { cluster: { name: 'dev', server: 'https://127.0.0.1:6001' } });
  const byKubeconfig = run(2, { cluster: { server: 'https://127.0.0.1:6001' } });
  const elsewhere = run(3, { cluster: { name: 'other', server: 'https://127.0.0.1:6002' } });
  const remote = run(4, { cluster: { server: 'https://10.0.0.1:6443' } });
  const choosing = run(5);
  const all = [byName, byKubeconfig, elsewhere, remote, choosing];
  assert.deepEqual(runsUsing(all, 'dev', 'https://127.0.0.1:6001'), [byName, byKubeconfig]);
  assert.deepEqual(runsUsing(all, 'dev', undefined), [byName], 'a cluster that does not run is matched by name only');
  assert.deepEqual(runsUsing(all, 'gone', undefined), []);
});

test('a run is described as its user recognises it; the refusal names each run and both ways on', () => {
  const a = run(4242, { dir: '/home/me/gizmo', command: runCommandLine(['--cluster', 'dev']) });
  const b = run(4343, { dir: '/home/me/my op', command: runCommandLine(['--kubeconfig', '/k', '--', "it's"]) });
  assert.equal(describeRun(a), 'pid 4242 in /home/me/gizmo (opkit run --cluster dev)');
  assert.equal(describeRun(b), `pid 4343 in /home/me/my op (opkit run --kubeconfig /k -- 'it'\\''s')`);
  assert.equal(describeRun(run(7)), 'pid 7 (opkit run, started 2030-01-01T00:00:00.000Z)', 'an older record');
  assert.equal(
    inUseRefusal('dev', [a]),
    'cluster "dev" is in use by a live opkit run: pid 4242 in /home/me/gizmo (opkit run --cluster dev); stop it first (Ctrl-C where it runs, or kill 4242), or stop the cluster anyway with: opkit env down --name dev --force',
  );
  assert.match(
    inUseRefusal('default', [a, b]),
    /^cluster "default" is in use by 2 live opkit runs: pid 4242 .*; pid 4343 .*; stop them first \(Ctrl-C where they run, or kill 4242 4343\), or stop the cluster anyway with: opkit env down --force$/,
  );
});

test('isLive: a pid that runs and started when the record says; a reused pid (another start time) is not the run', async () => {
  const mine = await processStartTicks(process.pid);
  assert.ok(mine !== undefined && mine > 0, 'this process has a start time in /proc');
  assert.equal(await isLive(run(process.pid, { startTicks: mine })), true);
  assert.equal(await isLive(run(process.pid, { startTicks: mine + 1 })), false, 'the pid was reused');
  assert.equal(await isLive(run(process.pid)), true, 'an older record without a start time: the pid decides');
  assert.equal(await isLive(run(process.pid), () => false), false);
});

test('liveRuns: the live runs but one, sorted; with prune the records of ended runs are removed', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-runs-'));
  try {
    await mkdir(join(root, 'runs'));
    for (const pid of [30, 10, 20, 99]) await writeFile(join(root, 'runs', `${pid}.json`), JSON.stringify(run(pid)));
    await writeFile(join(root, 'runs', 'broken.json'), '{');
    const alive = (pid: number) => pid !== 99;
    assert.deepEqual(
      (await liveRuns(root, { alive, except: 20 })).map((r) => r.pid),
      [10, 30],
    );
    assert.equal((await readdir(join(root, 'runs'))).length, 5, 'a reader that does not prune removes nothing');
    await liveRuns(root, { alive, prune: true });
    assert.deepEqual((await readdir(join(root, 'runs'))).sort(), ['10.json', '20.json', '30.json']);
    assert.deepEqual(await liveRuns(join(root, 'none')), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
