/**
 * @module chaos/replicas
 * An operator's replicas as a kubelet runs them: each one a process of the operator's command in a process group of
 * its own, started again after a back-off whenever it exits (a pod's `restartPolicy: Always`), its output kept. The
 * harness can kill one at once (SIGKILL, a crashed node or OOM kill), stop it as a pod's deletion does (SIGTERM, then
 * SIGKILL after the grace period), retire it as a scale-down does (stopped, not started again until `start()`),
 * pause it where it stands (SIGSTOP, a stalled process or VM) and resume it (SIGCONT). Each of these is told to the
 * replica's `events` (chaos/service's endpoint), so a webhook Service routes as the endpoints would.
 *
 * Guarantees: every exit is recorded with its code or signal, whether the harness caused it, and the output before it,
 * so the exits the operator chose itself (a crash loop) are told apart from the harness's faults; a signal reaches the
 * whole process group (an `npm start` or `npx` in front of the operator too); `pause()` resolves only once the kernel
 * reports the process stopped; a string given in `secrets` that the output ever holds is in `leaks`, also when it
 * arrived split over two chunks; `close()` ends every process group and waits for each to exit, and no timer of it
 * keeps the event loop alive after.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from '../errors.ts';
import { processState } from '../process.ts';
import type { EndpointEvents } from './service.ts';

/** How to run one replica: the operator's command, where, and its environment (merged over this process's). */
export interface ReplicaSpec {
  /** Its name, as `POD_NAME` would be (`chaos-0`). */
  readonly name: string;
  /** The program (`process.execPath`, `npx`, …). */
  readonly command: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** Where it runs. */
  readonly cwd: string;
  /** Variables over this process's environment. */
  readonly env: Readonly<Record<string, string>>;
}

/** One exit of a replica's process. */
export interface ReplicaExit {
  /** Its exit code, or null when a signal ended it. */
  readonly code: number | null;
  /** The signal that ended it, or null when it exited with a code. */
  readonly signal: NodeJS.Signals | null;
  /** ms since the epoch. */
  readonly at: number;
  /** The harness ended it (kill, stop, retire); otherwise the operator exited by itself. */
  readonly caused: boolean;
  /** The last lines the process printed (stdout and stderr together). */
  readonly tail: readonly string[];
}

/** How a `Replica` restarts, what it watches its output for, and whom it tells. */
export interface ReplicaOptions {
  /** Wait before a restart (default 500 ms; a kubelet backs off from 10 s, which a test has no time for). */
  readonly restartDelayMs?: number;
  /** Lines of output kept per process for its exit record (default 40). */
  readonly tailLines?: number;
  /** Strings that must never appear in its output (its ServiceAccount token); see `leaks`. */
  readonly secrets?: readonly string[];
  /** Told of each start, exit, pause and SIGTERM (a webhook Service's `events(name)`). */
  readonly events?: EndpointEvents;
}

/** How far back a secret split over two chunks of output is still seen. */
const SECRET_WINDOW = 4_096;

/** One replica of the operator, supervised; see the module comment. */
export class Replica {
  /** How it runs. */
  readonly spec: ReplicaSpec;
  /** Every exit, in order. */
  readonly exits: ReplicaExit[] = [];
  /** When each of its processes started (ms since the epoch). */
  readonly starts: number[] = [];
  readonly #options: Required<Omit<ReplicaOptions, 'events'>>;
  readonly #events: EndpointEvents | undefined;
  readonly #leaked = new Set<string>();
  #proc: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #log = '';
  #window = '';
  #tail: string[] = [];
  #partial = '';
  #causing = false;
  #retired = false;
  #closed = false;
  #paused = false;

  constructor(spec: ReplicaSpec, options: ReplicaOptions = {}) {
    this.spec = spec;
    this.#options = {
      restartDelayMs: options.restartDelayMs ?? 500,
      tailLines: options.tailLines ?? 40,
      secrets: options.secrets ?? [],
    };
    this.#events = options.events;
  }

  /** Its name (`spec.name`). */
  get name(): string {
    return this.spec.name;
  }

  /** The running process's pid (its process group's id too), or undefined between an exit and its restart. */
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

  /** The `secrets` its output held, each shortened to its first 6 characters. */
  get leaks(): string[] {
    return [...this.#leaked].map((s) => `${s.slice(0, 6)}…`);
  }

  /** Its last exit, for a report: `exit 1 at 2026-12-06T12:00:01.234Z`, or `no exit`. */
  lastExit(): string {
    const e = this.exits.at(-1);
    return e === undefined ? 'no exit' : `exit ${e.code ?? e.signal} at ${new Date(e.at).toISOString()}`;
  }

  /**
   * Starts its process (a no-op while one runs); after `retire()`, starts it again and the supervisor restarts it
   * from then on.
   */
  start(): void {
    if (this.#proc !== undefined || this.#closed) return;
    this.#retired = false;
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
    this.#events?.started();
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
        this.#events?.exited();
        resolve();
        if (!this.#closed && !this.#retired) void this.#restartLater();
      });
    });
  }

  /**
   * Whether a process runs, once the supervisor had its chance: after an exit, it is waited for until the restart
   * delay and `slackMs` have passed since (an exit at the end of a trial is still in its back-off).
   */
  async runningAgain(slackMs = 5_000): Promise<boolean> {
    const deadline = (this.exits.at(-1)?.at ?? 0) + this.#options.restartDelayMs + slackMs;
    while (!this.running && !this.#retired && !this.#closed && Date.now() < deadline) await sleep(50);
    return this.running;
  }

  /** SIGKILL to its process group, at once; the supervisor starts it again. Resolves once it exited. */
  async kill(): Promise<void> {
    await this.#signal('SIGKILL');
  }

  /**
   * SIGTERM, then SIGKILL after `graceMs` (default 30 s), as a pod's deletion; the supervisor starts it again.
   * `endpointsLagMs`: the webhook Service routes to it that much longer (default 0). Resolves once it exited: true if
   * it exited within the grace period (true too when no process ran).
   */
  async stop(graceMs = 30_000, options: { readonly endpointsLagMs?: number } = {}): Promise<boolean> {
    const exited = this.#exited;
    if (this.#proc?.pid === undefined) return true;
    this.#events?.terminating(options.endpointsLagMs ?? 0);
    await this.#signal('SIGTERM', false);
    const timer = sleep(graceMs, 'late' as const, { ref: false });
    const inTime = (await Promise.race([exited.then(() => 'gone' as const), timer])) === 'gone';
    if (!inTime) await this.#signal('SIGKILL');
    await exited;
    return inTime;
  }

  /** Stops it as a scale-down does (`stop(graceMs)`), and it is not started again until `start()`. */
  async retire(graceMs = 10_000): Promise<boolean> {
    this.#retired = true;
    return await this.stop(graceMs);
  }

  /**
   * SIGSTOP to its process group: it stops where it stands (its sockets stay open, its timers do not fire, what
   * arrives waits in the kernel). Resolves once the kernel reports the process stopped; throws if none runs.
   */
  async pause(): Promise<void> {
    const pid = this.#proc?.pid;
    if (pid === undefined)
      throw new TestenvError('NotRunning', `${this.spec.name} has no running process to pause (it exited)`);
    if (this.#paused) return;
    this.#paused = true;
    this.#group('SIGSTOP');
    this.#events?.paused(true);
    for (let i = 0; ; i++) {
      const state = processState(pid);
      if (state === undefined || state === 'T' || this.#proc?.pid !== pid) return;
      if (i >= 100)
        throw new TestenvError('NotRunning', `${this.spec.name} (pid ${pid}) not stopped 1 s after SIGSTOP`);
      await sleep(10);
    }
  }

  /** SIGCONT: a paused process goes on (the webhook Service routes to it again once probed). */
  resume(): void {
    if (this.#proc?.pid === undefined || !this.#paused) return;
    this.#paused = false;
    this.#group('SIGCONT');
    this.#events?.paused(false);
  }

  /** The complete lines it printed since the last `takeLog()`, across its processes; a partial last line waits. */
  takeLog(): string {
    const end = this.#log.lastIndexOf('\n') + 1;
    const log = this.#log.slice(0, end);
    this.#log = this.#log.slice(end);
    return log;
  }

  /** What it printed since the last `takeLog()`, left in place. */
  peekLog(): string {
    return this.#log;
  }

  /** Ends its process group for good (no restart) and waits for it to exit. */
  async close(graceMs = 5_000): Promise<void> {
    this.#closed = true;
    if (this.#paused) this.resume();
    await this.stop(graceMs);
  }

  /** Sends `signal` to the group, marked as the harness's; resolves once it exited unless `wait` is false. */
  async #signal(signal: NodeJS.Signals, wait = true): Promise<void> {
    if (this.#proc?.pid === undefined) return;
    const exited = this.#exited;
    this.#causing = true;
    if (this.#paused && signal !== 'SIGKILL') this.resume(); // a stopped process cannot act on SIGTERM
    this.#group(signal);
    if (wait) await exited;
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
    if (this.#options.secrets.length > 0) {
      const window = this.#window + text;
      for (const s of this.#options.secrets) if (window.includes(s)) this.#leaked.add(s);
      this.#window = window.slice(-SECRET_WINDOW);
    }
    const lines = (this.#partial + text).split('\n');
    this.#partial = lines.pop() ?? '';
    this.#tail.push(...lines);
    if (this.#tail.length > this.#options.tailLines) this.#tail = this.#tail.slice(-this.#options.tailLines);
  }

  async #restartLater(): Promise<void> {
    await sleep(this.#options.restartDelayMs, undefined, { ref: false });
    if (!this.#closed && !this.#retired) this.start();
  }
}
