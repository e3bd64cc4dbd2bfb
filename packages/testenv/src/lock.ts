/**
 * @module lock
 * A cross-process lock file. `withLock` creates the file atomically with its pid already in it (a private file linked
 * into place, so the lock file is never seen empty), runs the task and removes the file.
 *
 * Guarantees:
 * - At most one process holds the lock at a time, also while several waiters take over a stale lock at once.
 * - A lock whose owner pid is no longer alive is stale and is taken over, so a killed build never blocks the next one.
 *   A stale file is removed only under a takeover guard that the kernel releases when its holder dies (an abstract
 *   Unix socket on Linux), and only after reading it again under that guard: a waiter can never remove a lock that
 *   another waiter has just taken.
 * - Waiting is polled and bounded by a timeout; `onWait` names the holder once.
 * Caveats: pids are compared within one pid namespace, as the guard is within one network namespace; processes in
 * different containers sharing the file do not see each other's liveness. Off Linux the guard is an exclusive file
 * removed right after use.
 */
import { createHash, randomBytes } from 'node:crypto';
import { link, open, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from './errors.ts';
import { isProcessAlive } from './process.ts';

/** How `withLock` waits for another holder. */
export interface LockOptions {
  /** How long to wait for another holder, in milliseconds. */
  readonly timeoutMs: number;
  /** Called once when the lock is held by someone else, with their pid. */
  readonly onWait?: (holderPid: number) => void;
  /** Poll interval while waiting (default 250 ms). */
  readonly pollMs?: number;
}

/**
 * Runs `task` while holding the lock file `file` (created atomically with this pid in it, removed afterwards), taking
 * over a lock whose holder died; fails with `LockTimeout` after `timeoutMs` of waiting for a live holder.
 */
export async function withLock<T>(file: string, options: LockOptions, task: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let told = false;
  for (;;) {
    if (await tryCreate(file)) break;
    const holder = await readPid(file);
    if (holder !== undefined && !isProcessAlive(holder) && (await removeIfStale(file))) continue;
    if (!told && holder !== undefined) {
      options.onWait?.(holder);
      told = true;
    }
    if (Date.now() > deadline) {
      throw new TestenvError(
        'LockTimeout',
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for the lock ${file} held by pid ${holder ?? 'unknown'}; ` +
          `if no such process is running, delete the file${process.platform === 'linux' ? '' : ` and ${file}.takeover`}`,
      );
    }
    await sleep(options.pollMs ?? 250);
  }
  try {
    return await task();
  } finally {
    await rm(file, { force: true });
  }
}

/** Links a private file holding our pid to `file`; false when `file` exists. */
async function tryCreate(file: string): Promise<boolean> {
  const mine = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    await link(mine, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return false;
  } finally {
    await unlink(mine).catch(() => {});
  }
}

async function readPid(file: string): Promise<number | undefined> {
  const pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * Under the takeover guard: reads the lock again and removes it only if its owner is still dead. False when another
 * waiter holds the guard (it is taking over; the caller waits and looks again).
 */
async function removeIfStale(file: string): Promise<boolean> {
  const release = await takeoverGuard(file);
  if (!release) return false;
  try {
    const holder = await readPid(file);
    if (holder !== undefined && !isProcessAlive(holder)) await rm(file, { force: true });
    return true;
  } finally {
    await release();
  }
}

/** Holds the guard of `file` and returns its release, or undefined when another process holds it. */
async function takeoverGuard(file: string): Promise<(() => Promise<void>) | undefined> {
  if (process.platform === 'linux') {
    const name = `\0opkit-lock-${createHash('sha256').update(resolve(file)).digest('hex').slice(0, 40)}`;
    const server = createServer();
    const held = await new Promise<boolean>((done, fail) => {
      server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? done(false) : fail(err)));
      server.listen(name, () => done(true));
    });
    if (!held) return undefined;
    server.unref();
    return () => new Promise<void>((done) => server.close(() => done()));
  }
  const guard = `${file}.takeover`;
  try {
    await (await open(guard, 'wx')).close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return undefined;
  }
  return () => rm(guard, { force: true });
}
