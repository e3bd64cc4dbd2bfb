/**
 * @module commands/run-guard
 * The guard of the operator of an `opkit run`: a small process that outlives `opkit run` to stop its operator when
 * `opkit run` ends without doing so (SIGKILL, a crash). Run as `node run-guard.ts <operator pid> <marker>`, in a
 * session of its own (no signal of the terminal reaches it), its stdin a pipe from `opkit run`.
 *
 * Guarantee: when stdin closes — `opkit run` has ended, however it ended — and the operator still runs, the guard
 * sends SIGTERM to the operator's process group once, and exits; the operator drains as on SIGTERM. The operator is
 * recognised by its pid and its command line, which must contain `marker`: a pid since reused is never signalled
 * (where /proc tells: on Linux).
 * After a normal end of `opkit run` the operator has exited already, and the guard only exits.
 */
import { existsSync, readFileSync } from 'node:fs';

const [pidArg, marker] = process.argv.slice(2);
const pid = Number(pidArg);

/**
 * The operator still runs: its pid exists, is not a zombie, and its command line contains the marker. Without /proc
 * (not Linux), a pid that answers signal 0 runs.
 */
function operatorRuns(): boolean {
  if (!existsSync('/proc/self')) {
    try {
      return process.kill(pid, 0);
    } catch {
      return false;
    }
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') return false;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker ?? '\0');
  } catch {
    return false;
  }
}

let done = false;
function ownerEnded(): void {
  if (done) return;
  done = true;
  if (Number.isInteger(pid) && pid > 0 && operatorRuns()) {
    try {
      process.kill(-pid, 'SIGTERM');
    } catch {
      // it ended meanwhile
    }
  }
  process.exit(0);
}

process.stdin.on('end', ownerEnded);
process.stdin.on('error', ownerEnded);
process.stdin.resume();
