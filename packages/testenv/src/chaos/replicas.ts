/**
 * @module chaos/replicas
 * An operator's replicas as a kubelet runs them: each one a process of the operator's command in a process group of
 * its own, started again after a back-off whenever it exits (a pod's `restartPolicy: Always`), its output kept. The
 * harness can kill one at once (SIGKILL, a crashed node or OOM kill), stop it as a pod's deletion does (SIGTERM, then
 * SIGKILL after the grace period), pause it where it stands (SIGSTOP, a stalled process or VM) and resume it (SIGCONT).
 *
 * Guarantees: every exit is recorded with its code or signal, whether the harness caused it, and the output before it,
 * so the exits the operator chose itself (a crash loop) are told apart from the harness's faults; a signal reaches the
 * whole process group (an `npm start` or `npx` in front of the operator too); `close()` ends every process group and
 * waits for each to exit, and no timer of it keeps the event loop alive after.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** How to run one replica: the operator's command, where, and its environment (merged over this process's). */
export interface ReplicaSpec {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
}

/** One exit of a replica's process. */
export interface ReplicaExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** ms since the epoch. */
  readonly at: number;
  /** The harness ended it (kill, stop); otherwise the operator exited by itself. */
  readonly caused: boolean;
  /** The last lines the process printed (stdout and stderr together). */
  readonly tail: readonly string[];
}

/** How a `Replica` restarts. */
export interface ReplicaOptions {
  /** Wait before a restart (default 500 ms; a kubelet backs off from 10 s, which a test has no time for). */
  readonly restartDelayMs?: number;
  /** Lines of output kept per process for its exit record (default 40). */
  readonly tailLines?: number;
}

/** One replica of the operator, supervised; see the module comment. */
export class Replica {
  readonly spec: ReplicaSpec;
  /** Every exit, in order. */
  readonly exits: ReplicaExit[] = [];
  /** When each of its processes started (ms since the epoch). */
  readonly starts: number[] = [];
  readonly #options: Required<ReplicaOptions>;
  #proc: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #log = '';
  #tail: string[] = [];
  #partial = '';
  #causing = false;
  #closed = false;
  #paused = false;

  constructor(spec: ReplicaSpec, options: ReplicaOptions = {}) {
    this.spec = spec;
    this.#options = { restartDelayMs: options.restartDelayMs ?? 500, tailLines: options.tailLines ?? 40 };
  }

  /** The running process's pid (its process group's id too), or undefined between a exit and its restart. */
  get pid(): number | undefined {
    return this.#proc?.pid;
  }

  /** Whether a process runs now (a paused one counts). */
  get running(): boolean {
    return this.#proc !== undefined;
  }

  /** Whether it is paused (SIGSTOP, not yet resumed). */
  get paused(): boolean {
    return this.#paused;
  }

  /** The exits the harness did not cause. */
  get ownExits(): readonly ReplicaExit[] {
    return this.exits.filter((e) => !e.caused);
  }

  /** Starts its process (once; restarts are the supervisor's). */
  start(): void {
    if (this.#proc !== undefined || this.#closed) return;
    const proc = spawn(this.spec.command, [...this.spec.args], {
      cwd: this.spec.cwd,
      env: { ...process.env, ...this.spec.env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#proc = proc;
    this.starts.push(Date.now());
    this.#tail = [];
    this.#partial = '';
    const take = (chunk: Buffer) => this.#take(chunk.toString('utf8'));
    proc.stdout?.on('data', take);
    proc.stderr?.on('data', take);
    this.#exited = new Promise<void>((resolve) => {
      proc.once('error', (err) => this.#take(`${this.spec.name}: could not start: ${err.message}\n`));
      proc.once('close', (code, signal) => {
        if (this.#partial) this.#tail.push(this.#partial);
        this.exits.push({ code, signal, at: Date.now(), caused: this.#causing, tail: this.#tail.slice() });
        this.#causing = false;
        this.#paused = false;
        this.#proc = undefined;
        resolve();
        if (!this.#closed) void this.#restartLater();
      });
    });
  }

  /** SIGKILL to its process group, at once; the supervisor starts it again. Resolves once it exited. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL');
  }

  /** SIGTERM, then SIGKILL after `graceMs` (default 30 s), as a pod's deletion; resolves once it exited. */
  async stop(graceMs = 30_000): Promise<void> {
    const exited = this.#exited;
    if (!(await this.#signal('SIGTERM', false))) return;
    const timer = sleep(graceMs, 'late' as const, { ref: false });
    if ((await Promise.race([exited.then(() => 'gone' as const), timer])) === 'late') await this.#signal('SIGKILL');
    await exited;
  }

  /** SIGSTOP: the process stops where it stands (its sockets stay open, its timers do not fire). */
  pause(): void {
    if (this.#proc?.pid === undefined || this.#paused) return;
    this.#paused = true;
    this.#group('SIGSTOP');
  }

  /** SIGCONT: a paused process goes on. */
  resume(): void {
    if (this.#proc?.pid === undefined || !this.#paused) return;
    this.#paused = false;
    this.#group('SIGCONT');
  }

  /** What it printed since the last `takeLog()`, across its processes. */
  takeLog(): string {
    const log = this.#log;
    this.#log = '';
    return log;
  }

  /** Ends its process group for good (no restart) and waits for it to exit. */
  async close(graceMs = 5_000): Promise<void> {
    this.#closed = true;
    if (this.#paused) this.resume();
    await this.stop(graceMs);
  }

  /** Sends `signal` to the group, marked as the harness's; resolves once it exited unless `wait` is false. */
  async #signal(signal: NodeJS.Signals, wait = true): Promise<boolean> {
    if (this.#proc?.pid === undefined) return false;
    const exited = this.#exited;
    this.#causing = true;
    if (this.#paused && signal !== 'SIGKILL') this.resume(); // a stopped process cannot act on SIGTERM
    this.#group(signal);
    if (wait) await exited;
    return true;
  }

  #group(signal: NodeJS.Signals): void {
    const pid = this.#proc?.pid;
    if (pid === undefined) return;
    try {
      process.kill(-pid, signal);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
    }
  }

  #take(text: string): void {
    this.#log += text;
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop() ?? '';
    this.#tail.push(...lines);
    if (this.#tail.length > this.#options.tailLines) this.#tail = this.#tail.slice(-this.#options.tailLines);
  }

  async #restartLater(): Promise<void> {
    await sleep(this.#options.restartDelayMs, undefined, { ref: false });
    if (!this.#closed) this.start();
  }
}
