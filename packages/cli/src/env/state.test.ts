import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { describeLocalCluster, localClusters } from './state.ts';

test('localClusters: every state directory by name; up only with a live daemon of that directory and a ready status', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-state-'));
  const dir = (name: string) => join(root, 'clusters', name);
  const ready = { phase: 'ready', server: 'https://127.0.0.1:6001', kubeconfigPath: '/k' };
  // a stand-in daemon: a live process whose command line names its cluster's directory, as env/daemon.ts's does
  const daemon = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', dir('beta')], { stdio: 'ignore' });
  try {
    for (const [name, status, pid] of [
      ['beta', ready, daemon.pid],
      ['alpha', ready, process.pid], // a live pid that is not alpha's daemon (a reused pid)
      ['gamma', { phase: 'starting' }, daemon.pid], // beta's daemon, not gamma's
    ] as const) {
      await mkdir(dir(name), { recursive: true });
      await writeFile(join(dir(name), 'status.json'), JSON.stringify(status));
      await writeFile(join(dir(name), 'daemon.json'), JSON.stringify({ pid, startedAt: '' }));
    }
    const clusters = await localClusters({ OPKIT_STATE_DIR: root });
    assert.deepEqual(
      clusters.map((c) => [c.name, c.running, c.up, describeLocalCluster(c)]),
      [
        ['alpha', false, undefined, 'not running'],
        ['beta', true, { server: 'https://127.0.0.1:6001', kubeconfigPath: '/k' }, 'ready at https://127.0.0.1:6001'],
        ['gamma', false, undefined, 'not running'],
      ],
    );
    assert.deepEqual(await localClusters({ OPKIT_STATE_DIR: join(root, 'none') }), []);
  } finally {
    daemon.kill();
    await rm(root, { recursive: true, force: true });
  }
});
