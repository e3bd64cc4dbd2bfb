import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
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
  const first = events[0] === 'start 1' ? '1' : '2'; // either may win; they must not overlap
  const second = first === '1' ? '2' : '1';
  assert.deepEqual(events, [`start ${first}`, `end ${first}`, `start ${second}`, `end ${second}`]);
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

/** A process that waits for `startAt`, then holds the lock for 60 ms, appending "in"/"out" lines to `log`. */
const HOLDER = `
import { appendFileSync } from 'node:fs';
const [lockUrl, file, log, startAt] = process.argv.slice(1);
const { withLock } = await import(lockUrl);
await new Promise((r) => setTimeout(r, Math.max(0, Number(startAt) - Date.now())));
await withLock(file, { timeoutMs: 30000, pollMs: 5 }, async () => {
  appendFileSync(log, 'in ' + process.pid + '\\n');
  await new Promise((r) => setTimeout(r, 60));
  appendFileSync(log, 'out ' + process.pid + '\\n');
});
`;

test('six processes taking over one stale lock at once hold it one at a time (10 trials)', {
  timeout: 120_000,
}, async () => {
  const { file, cleanup } = await tempFile('stale.lock');
  const lockUrl = new URL('./lock.ts', import.meta.url).href;
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  for (let trial = 1; trial <= 10; trial++) {
    await writeFile(file, `${dead}\n`);
    const log = `${file}.log-${trial}`;
    const startAt = String(Date.now() + 1500);
    const children = Array.from({ length: 6 }, () =>
      spawn(process.execPath, ['--input-type=module', '-e', HOLDER, lockUrl, file, log, startAt], { stdio: 'inherit' }),
    );
    const codes = await Promise.all(children.map((c) => new Promise((done) => c.once('exit', done))));
    assert.deepEqual(codes, [0, 0, 0, 0, 0, 0]);
    let inside = 0;
    for (const line of (await readFile(log, 'utf8')).trim().split('\n')) {
      inside += line.startsWith('in ') ? 1 : -1;
      assert.ok(inside <= 1, `trial ${trial}: two processes held the lock at once:\n${await readFile(log, 'utf8')}`);
    }
    await assert.rejects(readFile(file), { code: 'ENOENT' }, 'the last holder removed the lock');
  }
  const left = (await readdir(join(file, '..'))).filter((f) => !f.includes('.log-'));
  assert.deepEqual(left, [], 'no private link files are left behind');
  await cleanup();
});
