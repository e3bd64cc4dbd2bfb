import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { KEPT_MARKER } from './paths.ts';
import { reapStale } from './run-dir.ts';
import { HOST_PATH_VOLUME_ROOT } from './volumes.ts';

test('reapStale removes run directories of dead owners and their volume directories, except those marked kept', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-reap-'));
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  const runDir = async (name: string, ownerPid: string | number, kept: boolean) => {
    await mkdir(join(root, name));
    await writeFile(join(root, name, 'owner.json'), JSON.stringify({ ownerPid: Number(ownerPid) }));
    await writeFile(join(root, name, 'kube-apiserver.log'), 'the log a test asked to keep\n');
    if (kept) await writeFile(join(root, name, KEPT_MARKER), '');
  };
  await runDir('env-kept', dead, true);
  await runDir('env-stale', dead, false);
  await runDir('env-live', process.pid, false);
  const volumes = {
    stale: `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`,
    live: `${HOST_PATH_VOLUME_ROOT}/${randomUUID()}`,
  };
  for (const [name, path] of Object.entries(volumes)) {
    await mkdir(path, { recursive: true });
    await mkdir(join(root, `env-${name}`, 'etcd'));
    await writeFile(join(root, `env-${name}`, 'etcd', 'db'), `PV ${path}`);
  }
  const lines: string[] = [];
  await reapStale((l) => lines.push(l), root);
  const exists = (path: string) =>
    access(path).then(
      () => true,
      () => false,
    );
  assert.deepEqual([await exists(volumes.stale), await exists(volumes.live)], [false, true]);
  await rm(volumes.live, { recursive: true, force: true });
  assert.deepEqual((await readdir(root)).sort(), ['env-kept', 'env-live']);
  assert.deepEqual(await readdir(join(root, 'env-kept')), [KEPT_MARKER, 'kube-apiserver.log', 'owner.json'].sort());
  assert.equal(lines.length, 1);
  assert.match(lines[0] ?? '', /reaped a stale environment in .*env-stale/);
  await rm(root, { recursive: true, force: true });
});
