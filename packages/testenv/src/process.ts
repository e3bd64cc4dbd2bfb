/**
 * @module process
 * Child-process helpers: run a command to completion with its output captured line by line, check whether a pid
 * is alive, and read its state. Long-running components are supervised by `component.ts`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * True when `pid` runs on this machine: signal 0 reaches it (or it exists as another user's: `EPERM`) and, where
 * `/proc` tells (Linux), it is not a zombie — a process that has ended and waits for its parent to reap it counts as
 * ended. Elsewhere a pid that exists counts as alive.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const state = processState(pid);
  return state === undefined ? process.platform !== 'linux' : state !== 'Z';
}

/** The state letter of `pid` in /proc (`R`, `S`, `T` stopped, `Z` zombie, …); undefined if it is gone or not Linux. */
export function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return undefined;
  }
}

export interface CommandResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  /** The last lines of stderr (at most 200). */
  readonly stderrTail: string[];
}

export interface RunOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** Called for every stderr line as it arrives. */
  readonly onStderrLine?: (line: string) => void;
  readonly signal?: AbortSignal;
}

/** Runs `command args…` to completion. Never rejects for a non-zero exit: the caller reads `code`. */
export function runCommand(command: string, args: readonly string[], options: RunOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      signal: options.signal,
    });
    const stdout: string[] = [];
    const tail: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => stdout.push(chunk));
    const lines = createInterface({ input: child.stderr });
    lines.on('line', (line) => {
      tail.push(line);
      if (tail.length > 200) tail.shift();
      options.onStderrLine?.(line);
    });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout: stdout.join(''), stderrTail: tail });
    });
  });
}
