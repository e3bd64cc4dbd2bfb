import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { liveRuns, runsUsing } from '../env/runs.ts';
import { type ReservingRun, reservePorts } from './run-reservations.ts';

/** Chooses the first port from 8443 up that no other run has, slowly (as binding checks take time). */
const firstFree = async (reserved: ReadonlyMap<number, ReservingRun>) => {
  let port = 8443;
  while (reserved.has(port)) port++;
  await sleep(30);
  return { value: port, ports: [port] };
};

test('runs choosing at the same time never get the same port; an ended run’s record is ignored and removed', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-reservations-'));
  try {
    await mkdir(join(root, 'runs'));
    await writeFile(join(root, 'runs', '999.json'), JSON.stringify({ pid: 999, started: '', ports: [8443] }));
    const alive = (pid: number) => pid !== 999;
    const runs = await Promise.all([101, 102, 103].map((pid) => reservePorts(firstFree, { root, pid, alive })));
    assert.deepEqual(
      runs.map((r) => r.value).sort(),
      [8443, 8444, 8445],
      'each run got its own port; the ended run’s 8443 was free to take',
    );
    assert.deepEqual((await readdir(join(root, 'runs'))).sort(), ['101.json', '102.json', '103.json']);
    await runs[0]?.release();
    await runs[0]?.release();
    const next = await reservePorts(firstFree, { root, pid: 104, alive });
    assert.equal(next.value, runs[0]?.value, 'a released port can be chosen again');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('a state directory that cannot be written does not stop a run: the ports are chosen, and it says why', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-reservations-'));
  try {
    await writeFile(join(root, 'runs'), 'a file where the directory belongs');
    const r = await reservePorts(firstFree, { root, pid: 201 });
    assert.equal(r.value, 8443);
    assert.match(r.unrecorded ?? '', /runs: EEXIST$/);
    await r.release();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('each reserved port comes with the live run that recorded it', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-reservations-'));
  try {
    const first = await reservePorts(async () => ({ value: 0, ports: [8443, 8081] }), { root, pid: 301 });
    let seen: ReadonlyMap<number, ReservingRun> = new Map();
    const second = await reservePorts(
      async (reserved) => {
        seen = reserved;
        return { value: 0, ports: [] };
      },
      { root, pid: 302, alive: (pid) => pid === 301 },
    );
    assert.deepEqual([...seen.keys()].sort(), [8081, 8443]);
    assert.equal(seen.get(8443)?.pid, 301);
    assert.match(seen.get(8443)?.started ?? '', /^\d{4}-\d\d-\d\dT/);
    await Promise.all([first.release(), second.release()]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('a run records its directory and command with its ports, then the cluster it uses; release removes it', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-runs-'));
  try {
    const r = await reservePorts(async () => ({ value: 0, ports: [8443] }), {
      root,
      run: { dir: '/home/me/gizmo', command: 'opkit run --cluster dev' },
    });
    const [before] = await liveRuns(root);
    assert.deepEqual(
      { ...before, started: '', startTicks: 0 },
      {
        pid: process.pid,
        startTicks: 0,
        started: '',
        dir: '/home/me/gizmo',
        command: 'opkit run --cluster dev',
        ports: [8443],
      },
    );
    await r.useCluster({ name: 'dev', server: 'https://127.0.0.1:6001' });
    const [after] = await liveRuns(root);
    assert.deepEqual(after?.cluster, { name: 'dev', server: 'https://127.0.0.1:6001' });
    assert.deepEqual(after?.ports, [8443]);
    assert.deepEqual(
      runsUsing(await liveRuns(root), 'dev', undefined).map((x) => x.pid),
      [process.pid],
    );
    await r.release();
    assert.deepEqual(await liveRuns(root), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
