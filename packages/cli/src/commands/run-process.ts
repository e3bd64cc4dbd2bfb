/**
 * @module commands/run-process
 * The operator process of `opkit run`, run the way a shell runs a foreground job, so that one Ctrl-C is one signal
 * for the operator, and the operator never outlives `opkit run` unseen.
 *
 * Guarantees:
 * - The operator runs in a session (and process group) of its own. The signals a terminal sends to the foreground
 *   process group — Ctrl-C, Ctrl-\, Ctrl-Z, a hangup — reach `opkit run` only, and `opkit run` passes each on to the
 *   operator's process group as `relay` decides: SIGINT, SIGTERM and SIGQUIT as they are, SIGHUP as SIGTERM (a
 *   terminal that closes makes the operator drain); SIGTSTP (Ctrl-Z) stops the operator's group and then `opkit run`,
 *   SIGCONT (`fg`, `bg`) continues the operator's group. A supervisor's SIGTERM, to `opkit run` or to its process group, is
 *   passed on once too.
 * - A stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that comes less than `SAME_REQUEST_MS` after the one passed on
 *   is the same request delivered twice — by the terminal and by a wrapper that passes signals on as well (`npx`,
 *   `npm run`) — and is not passed again. A later one is: a second Ctrl-C makes the operator exit at once (its rule).
 * - When `opkit run` ends without passing anything on (SIGKILL, a crash), its guard (run-guard.ts) sends SIGTERM to
 *   the operator's process group: the operator drains as on SIGTERM and does not run on unseen.
 * - `opkit run` exits as a shell would (`exitCodeOf`).
 * Caveats: a signal sent to the operator's pid itself, or to every process of a cgroup (systemd's default
 * `KillMode=control-group`), reaches the operator besides the one `opkit run` passes on: two within its stop make it
 * exit at once. The operator has no controlling terminal: it writes to the terminal as before, and reads from it
 * without job control.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

/** The signals `opkit run` handles while its operator runs. */
export const RELAYED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGTSTP', 'SIGCONT'] as const;
export type RelayedSignal = (typeof RELAYED)[number];

/** How close to the stop signal passed on another one counts as the same request delivered twice. */
export const SAME_REQUEST_MS = 1_000;

/** What `opkit run` does with a signal it receives. */
export type Relay =
  /** Send `signal` to the operator's process group. */
  | { readonly action: 'pass'; readonly signal: NodeJS.Signals }
  /** Nothing: the stop request was passed on already. */
  | { readonly action: 'drop' }
  /** Stop the operator's group (SIGSTOP), then `opkit run` itself. */
  | { readonly action: 'suspend' }
  /** Continue the operator's group (SIGCONT). */
  | { readonly action: 'resume' };

/**
 * What `opkit run` does with `signal`, received at `now` (monotonic milliseconds), when it last passed a stop signal
 * on at `lastStopAt` (undefined: never).
 */
export function relay(signal: RelayedSignal, now: number, lastStopAt: number | undefined): Relay {
  if (signal === 'SIGTSTP') return { action: 'suspend' };
  if (signal === 'SIGCONT') return { action: 'resume' };
  if (lastStopAt !== undefined && now - lastStopAt < SAME_REQUEST_MS) return { action: 'drop' };
  return { action: 'pass', signal: signal === 'SIGHUP' ? 'SIGTERM' : signal };
}

/**
 * The shell's exit code: 128 + the signal's number for a run stopped by a signal — the one `opkit run` received and
 * passed on (`interrupted`), even when the operator then stopped cleanly with 0, or the one that ended the child —
 * else the child's own code.
 */
export function exitCodeOf(
  code: number | null,
  signal: NodeJS.Signals | null,
  interrupted?: NodeJS.Signals | undefined,
): number {
  if (interrupted && (code === 0 || code === null)) return 128 + (constants.signals[interrupted] ?? 15);
  if (code !== null) return code;
  return signal ? 128 + (constants.signals[signal] ?? 15) : 1;
}

// The sibling module as this one is run: `.ts` from the sources, `.js` from the built package.
const GUARD = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './run-guard.ts' : './run-guard.js', import.meta.url),
);

/** The operator's command: `node file args…` in `cwd` with `env`. */
export interface OperatorCommand {
  readonly file: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

/** Sends `signal` to process group `pgid`; a group that has ended is no error. */
function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group has ended
  }
}

/** Starts the guard of operator `pid` (see run-guard.ts); says so when it cannot, and the run goes on without it. */
function startGuard(pid: number, marker: string, out: (line: string) => void) {
  const guard = spawn(process.execPath, [GUARD, String(pid), marker], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  guard.once('error', (err) =>
    out(`opkit: cannot start the guard of the operator (${err.message}): if opkit run is killed, stop pid ${pid} too`),
  );
  guard.stdin.on('error', () => {}); // a guard that has ended: nothing to tell it
  return guard;
}

/**
 * Runs the operator with signals passed on as the module comment says, until it exits; resolves the exit code
 * `opkit run` ends with.
 */
export async function runOperatorProcess(cmd: OperatorCommand, out: (line: string) => void): Promise<number> {
  // the handlers are in place before the operator starts: a Ctrl-C the moment it is up (this process may be descheduled
  // between the spawn and the next line, while the operator boots) is passed on, never left to end this process alone
  let pgid: number | undefined;
  let interrupted: NodeJS.Signals | undefined;
  let lastStopAt: number | undefined;
  const handlers = RELAYED.map((received) => {
    const handler = () => {
      if (pgid === undefined) return; // not reachable: handlers run on the event loop, after the spawn below
      const now = performance.now();
      const r = relay(received, now, lastStopAt);
      if (r.action === 'pass') {
        lastStopAt = now;
        interrupted ??= received;
        signalGroup(pgid, r.signal);
      } else if (r.action === 'suspend') {
        // SIGSTOP: the kernel discards a SIGTSTP sent to the operator's group (an orphaned group, in its own session)
        signalGroup(pgid, 'SIGSTOP');
        process.kill(process.pid, 'SIGSTOP');
      } else if (r.action === 'resume') {
        signalGroup(pgid, 'SIGCONT');
      }
    };
    process.on(received, handler);
    return [received, handler] as const;
  });
  const removeHandlers = () => {
    for (const [received, handler] of handlers) process.off(received, handler);
  };
  const child = spawn(process.execPath, [cmd.file, ...cmd.args], {
    cwd: cmd.cwd,
    env: cmd.env,
    stdio: 'inherit',
    detached: true,
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  pgid = child.pid;
  if (pgid === undefined) {
    try {
      await exited; // rejects with the spawn error
      return 1;
    } finally {
      removeHandlers();
    }
  }
  const guard = startGuard(pgid, cmd.file, out);
  try {
    const { code, signal } = await exited;
    return exitCodeOf(code, signal, interrupted);
  } finally {
    removeHandlers();
    guard.stdin.end();
  }
}
