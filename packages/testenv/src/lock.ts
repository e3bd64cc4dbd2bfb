/**
 * @module lock
 * A cross-process lock file. `withLock` creates the file exclusively (O_EXCL), writes its pid, runs the task and removes
 * the file. A lock whose owner pid is no longer alive is stale and is taken over, so a killed build never blocks the
 * next one. Waiting is polled and bounded by a timeout.
 */
import { open, readFile, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from './errors.ts';
import { isProcessAlive } from './process.ts';

export interface LockOptions {
  /** How long to wait for another holder, in milliseconds. */
  readonly timeoutMs: number;
  /** Called once when the lock is held by someone else, with their pid. */
  readonly onWait?: (holderPid: number) => void;
}

export async function withLock<T>(file: string, options: LockOptions, task: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let told = false;
  for (;;) {
    try {
      const handle = await open(file, 'wx');
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
      if (Number.isInteger(holder) && holder > 0 && !isProcessAlive(holder)) {
        await rm(file, { force: true });
        continue;
      }
      if (!told && Number.isInteger(holder)) {
        options.onWait?.(holder);
        told = true;
      }
      if (Date.now() > deadline) {
        throw new TestenvError(
          'LockTimeout',
          `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for the lock ${file} held by pid ${holder}; ` +
            'if no such process is running, delete the file',
        );
      }
      await sleep(250);
    }
  }
  try {
    return await task();
  } finally {
    await rm(file, { force: true });
  }
}
