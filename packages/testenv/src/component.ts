/**
 * @module component
 * One supervised control-plane process. `start()` spawns it with its output appended to a log file and waits until
 * its readiness probe passes; if the process exits first, or the probe does not pass in time, the error names the
 * component, its exit code and the tail of its log. `stop()` sends SIGTERM, then SIGKILL after a grace period (3 s:
 * kube-apiserver 1.37 stops its controllers at once but then lingers until killed; the others exit well within it),
 * and resolves only when the process is gone. A running component does not keep its owner's process alive (its child
 * handle is unref'd): a test process that ends without `stop()` — a failed test, an error — exits, and the environment
 * ends the components then (see environment.ts); `start()` and `stop()` hold the process open while they wait.
 *
 * A process that exits before it is ready fails as `ComponentFailed`, or as `PortInUse` when its log says it could not
 * bind its address: another process took a port between `freePorts()` and the bind, and the caller retries with fresh
 * ports. The probe's answer counts only while the process itself listens on the probed port (listeners.ts), so the
 * process that took the port cannot answer for it. `exitFailure()` reads that from the log because a child process's output is the only signal it gives (Go's
 * `bind: address already in use`); this is the one place in testenv where a message's text decides anything.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestenvError } from './errors.ts';
import { listensOn } from './listeners.ts';

export interface ComponentSpec {
  readonly name: string;
  readonly binary: string;
  readonly args: readonly string[];
  readonly logFile: string;
  /** Resolves true once the component serves; may throw while it is not up yet. */
  readonly probe: () => Promise<boolean>;
  /** The port the probe asks: its answer counts only while this process listens there (see listeners.ts). */
  readonly port?: number;
  readonly startTimeoutMs: number;
}

export class Component {
  readonly spec: ComponentSpec;
  #child: ChildProcess | undefined;
  #exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> | undefined;
  /** Called with the pid each time the process starts (the environment records it for reaping). */
  onSpawn: ((pid: number) => void) | undefined;

  constructor(spec: ComponentSpec) {
    this.spec = spec;
  }

  get pid(): number | undefined {
    return this.#child?.exitCode === null && this.#child.signalCode === null ? this.#child.pid : undefined;
  }

  async start(): Promise<void> {
    const { name, binary, args, logFile } = this.spec;
    const log = await open(logFile, 'a');
    let child: ChildProcess;
    try {
      child = spawn(binary, args, { stdio: ['ignore', log.fd, log.fd] });
    } finally {
      await log.close();
    }
    this.#child = child;
    // the probe loop's timers hold the process open while starting; once up, the component does not
    child.unref();
    this.#exit = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      child.once('error', () => resolve({ code: null, signal: null }));
    });
    if (child.pid !== undefined) this.onSpawn?.(child.pid);
    const deadline = Date.now() + this.spec.startTimeoutMs;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    void this.#exit.then((e) => {
      exited = e;
    });
    let lastProbeError: unknown;
    for (;;) {
      if (exited) {
        const tail = await this.logTail();
        throw new TestenvError(
          exitFailure(tail),
          `${name} exited with ${exited.code ?? exited.signal ?? 'an error'} before it was ready; last lines of ${logFile}:\n${tail}`,
        );
      }
      try {
        // an answer from another process that holds the port does not count: this one then fails to bind, and exits
        if ((await this.spec.probe()) && (await this.#holdsPort(child)) !== false) return;
      } catch (err) {
        lastProbeError = err;
      }
      if (Date.now() > deadline) {
        await this.stop();
        const why = lastProbeError instanceof Error ? ` (last probe: ${lastProbeError.message})` : '';
        throw new TestenvError(
          'StartTimeout',
          `${name} was not ready within ${this.spec.startTimeoutMs / 1000} s${why}; last lines of ${logFile}:\n${await this.logTail()}`,
        );
      }
      await sleep(100);
    }
  }

  /** Whether `child` listens on the probed port (undefined: no port given, or the system cannot tell). */
  async #holdsPort(child: ChildProcess): Promise<boolean | undefined> {
    const { port } = this.spec;
    if (port === undefined || child.pid === undefined) return undefined;
    return listensOn(child.pid, port);
  }

  async stop(graceMs = 3_000): Promise<void> {
    const child = this.#child;
    const exit = this.#exit;
    if (!child || !exit || child.exitCode !== null || child.signalCode !== null) return;
    child.ref(); // until its exit is seen, even after the SIGKILL timer has run
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    try {
      await exit;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends SIGKILL without waiting (for exit handlers). */
  killNow(): void {
    if (this.pid !== undefined) this.#child?.kill('SIGKILL');
  }

  async logTail(lines = 20): Promise<string> {
    const text = await readFile(this.spec.logFile, 'utf8').catch(() => '');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  }
}

/**
 * How a component that exited before it was ready failed, from the last lines of its log (see the module comment for
 * why its text): `PortInUse` when it could not bind a port, else `ComponentFailed`.
 */
export function exitFailure(logTail: string): 'PortInUse' | 'ComponentFailed' {
  return /address already in use/.test(logTail) ? 'PortInUse' : 'ComponentFailed';
}
