/**
 * @module watchdog
 * A tiny process that outlives its owner to clean up after it. The owner (the process that started an environment)
 * writes `pid <n>` lines to the watchdog's stdin as components start, `exited <n>` as they stop, and `done` after a clean stop. When stdin closes
 * without `done` — the owner died, even by SIGKILL — the watchdog sends SIGTERM to every recorded pid whose command line still names the run directory, SIGKILL after
 * 5 s, removes the volume directories the cluster provisioned (volumes.ts), removes the run directory — or, when told
 * `keep`, marks it kept (a `KEPT` file, as `stop()` writes) so that no
 * later `start()` reaps it — and exits. Run as: `node watchdog.ts <runDir>`.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KEPT_MARKER, KEPT_TEXT } from './paths.ts';
import { removeVolumeDirs } from './volumes.ts';

const runDir = process.argv[2];
const pids = new Set<number>();
let done = false;
let keep = false;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** True when `pid` is still one of ours: its command line names the run directory (guards against pid reuse). */
function ours(pid: number): boolean {
  try {
    return runDir !== undefined && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(runDir);
  } catch {
    return false;
  }
}

function signalAll(signal: NodeJS.Signals): void {
  for (const pid of pids) {
    if (!ours(pid)) {
      pids.delete(pid);
      continue;
    }
    try {
      process.kill(pid, signal);
    } catch {
      pids.delete(pid);
    }
  }
}

process.on('SIGINT', () => {}); // a Ctrl-C in the owner's terminal must not stop the clean-up
process.on('SIGTERM', () => {});
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const [verb, arg] = line.trim().split(/\s+/);
  if (verb === 'pid' && arg) pids.add(Number(arg));
  else if (verb === 'exited' && arg) pids.delete(Number(arg));
  else if (verb === 'done') done = true;
  else if (verb === 'keep') keep = true;
});
lines.on('close', () => {
  if (done) process.exit(0);
  signalAll('SIGTERM');
  const started = Date.now();
  const timer = setInterval(() => {
    for (const pid of pids) if (!alive(pid)) pids.delete(pid);
    if (pids.size > 0 && Date.now() - started < 5_000) return;
    signalAll('SIGKILL');
    clearInterval(timer);
    void cleanUp();
  }, 100);
});

/** Removes the volume directories the cluster provisioned, then removes the run directory or marks it kept; exits. */
async function cleanUp(): Promise<void> {
  if (runDir) await removeVolumeDirs(runDir).catch(() => 0);
  if (runDir && keep) {
    try {
      writeFileSync(join(runDir, KEPT_MARKER), KEPT_TEXT);
    } catch {
      // the directory is gone already: nothing to keep
    }
  } else if (runDir) rmSync(runDir, { recursive: true, force: true });
  process.exit(0);
}
