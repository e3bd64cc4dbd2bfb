/**
 * @module children/run
 * Starts a benchmark child process (Node with --expose-gc) and exchanges JSON lines with it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export class Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly #lines: string[] = [];
  readonly #waiters: ((line: string) => void)[] = [];
  #stderr = '';

  constructor(script: string, args: readonly string[]) {
    const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
    this.process = spawn(process.execPath, ['--expose-gc', path, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    createInterface({ input: this.process.stdout }).on('line', (line) => {
      const w = this.#waiters.shift();
      if (w) w(line);
      else this.#lines.push(line);
    });
    this.process.stderr.setEncoding('utf8').on('data', (c: string) => {
      this.#stderr = (this.#stderr + c).slice(-4000);
    });
  }

  /** The next JSON message; rejects if the child exits first. */
  next<T>(): Promise<T> {
    const line = this.#lines.shift();
    if (line !== undefined) return Promise.resolve(JSON.parse(line) as T);
    return new Promise((resolve, reject) => {
      const onExit = (code: number | null) =>
        reject(new Error(`child exited (${code}) before reporting:\n${this.#stderr}`));
      this.process.once('exit', onExit);
      this.#waiters.push((l) => {
        this.process.off('exit', onExit);
        resolve(JSON.parse(l) as T);
      });
    });
  }

  send(command: string): void {
    this.process.stdin.write(`${command}\n`);
  }

  async exit(): Promise<void> {
    if (this.process.exitCode !== null) return;
    await new Promise((r) => {
      this.process.once('exit', r);
      setTimeout(() => this.process.kill('SIGKILL'), 10_000).unref();
    });
  }
}
