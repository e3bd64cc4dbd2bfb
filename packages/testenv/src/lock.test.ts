import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isTestenvError } from './errors.ts';
import { withLock } from './lock.ts';

async function tempFile(name: string): Promise<{ file: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-lock-'));
  return { file: join(dir, name), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

test('withLock runs holders one at a time and removes the lock file', async () => {
  const { file, cleanup } = await tempFile('a.lock');
  const events: string[] = [];
  const task = (id: string) => async () => {
    events.push(`start ${id}`);
    await sleep(50);
    events.push(`end ${id}`);
  };
  await Promise.all([withLock(file, { timeoutMs: 5_000 }, task('1')), withLock(file, { timeoutMs: 5_000 }, task('2'))]);
  assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2']);
  await assert.rejects(readFile(file), { code: 'ENOENT' });
  await cleanup();
});

test('withLock takes over a lock whose owner process is dead', async () => {
  const { file, cleanup } = await tempFile('b.lock');
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  await writeFile(file, `${dead}\n`);
  assert.equal(await withLock(file, { timeoutMs: 1_000 }, async () => 'ran'), 'ran');
  await cleanup();
});

test('withLock times out with LockTimeout while a live process holds the lock', async () => {
  const { file, cleanup } = await tempFile('c.lock');
  await writeFile(file, `${process.pid}\n`);
  let waitedFor = 0;
  await assert.rejects(
    withLock(file, { timeoutMs: 300, onWait: (pid) => (waitedFor = pid) }, async () => 'never'),
    (err) => isTestenvError(err, 'LockTimeout') && err.message.includes(String(process.pid)),
  );
  assert.equal(waitedFor, process.pid);
  await cleanup();
});
