/**
 * `startFleet`: a hub and named members, their kubeconfigs in a folder, whole; members added and removed; bad names
 * refused before anything starts.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { startFleet, TestenvError } from '../src/index.ts';
import { quiet } from './helpers.ts';

test('a hub and members, a folder of their kubeconfigs; add and remove', { timeout: 120_000 }, async () => {
  const fleet = await startFleet({ members: ['eu-1'], start: { nodes: 0, log: quiet } });
  try {
    assert.deepEqual(await readdir(fleet.dir), ['eu-1.kubeconfig']);
    const eu1 = fleet.members.get('eu-1');
    assert.ok(eu1 && eu1.server !== fleet.hub.server);
    assert.equal(
      await readFile(join(fleet.dir, 'eu-1.kubeconfig'), 'utf8'),
      await readFile(eu1.kubeconfigPath, 'utf8'),
    );
    const us2 = await fleet.add('us-2');
    assert.equal((await us2.api.request({ path: '/version' })).status, 200);
    assert.deepEqual((await readdir(fleet.dir)).sort(), ['eu-1.kubeconfig', 'us-2.kubeconfig']);
    await fleet.remove('eu-1');
    assert.deepEqual(await readdir(fleet.dir), ['us-2.kubeconfig']);
    assert.deepEqual([...fleet.members.keys()], ['us-2']);
    await assert.rejects(fleet.add('us-2'), /two members are named "us-2"/);
  } finally {
    await fleet.stop();
  }
  assert.equal(existsSync(fleet.dir), false, 'the folder is removed');
});

test('bad member names are refused before anything starts', async () => {
  for (const members of [['Upper'], ['hub'], ['a', 'a'], ['ü']])
    await assert.rejects(
      startFleet({ members }),
      (e: unknown) => e instanceof TestenvError && e.code === 'InvalidOption',
      JSON.stringify(members),
    );
});
