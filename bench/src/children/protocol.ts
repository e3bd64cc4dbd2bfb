/**
 * @module children/protocol
 * How benchmark child processes talk to the parent: one JSON object per stdout line; commands arrive as lines on
 * stdin. Children measure themselves (heap after a forced GC, CPU time, RSS) so the parent's own memory never counts.
 */
import { createInterface } from 'node:readline';

export function report(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

/** Resolves with the next stdin line. */
export function nextCommand(): Promise<string> {
  return new Promise((resolve) => {
    const rl = createInterface({ input: process.stdin });
    rl.once('line', (line) => {
      rl.close();
      resolve(line.trim());
    });
  });
}

/** Forces garbage collection (the child runs with --expose-gc) and returns the used heap in bytes. */
export function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

export function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * Resolves when `count()` reaches `target` (the handler calls the resolver it is given), or 15 s after the parent
 * says `end` (the writes are done), so a child whose informer lost events reports them as missed instead of hanging.
 */
export async function waitForEvents(
  target: number,
  count: () => number,
  setResolver: (r: () => void) => void,
): Promise<void> {
  if (count() >= target) return;
  await new Promise<void>((resolve) => {
    setResolver(resolve);
    void nextCommand().then(() => setTimeout(resolve, 15_000).unref());
  });
}

/** Counts update events and reports the churn figures once the parent's writes are seen (or given up on). */
export class ChurnMeter {
  updates = 0;
  #firstAt = 0;
  #lastAt = 0;
  #target = Number.POSITIVE_INFINITY;
  #reached: () => void = () => {};

  /** Call on every update event. */
  readonly onUpdate = (): void => {
    this.updates += 1;
    if (this.updates === 1) this.#firstAt = performance.now();
    this.#lastAt = performance.now();
    if (this.updates >= this.#target) this.#reached();
  };

  /** Waits for `churn N` from the parent, then for N updates, and reports events/s and CPU per event. */
  async measure(extra: Record<string, unknown> = {}): Promise<void> {
    const churn = Number((await nextCommand()).split(' ')[1]);
    const cpu0 = cpuSeconds();
    this.#target = churn;
    await waitForEvents(
      churn,
      () => this.updates,
      (r) => {
        this.#reached = r;
      },
    );
    report({
      phase: 'churned',
      events: this.updates,
      missed: Math.max(0, churn - this.updates),
      ...extra,
      eventsPerSecond: this.updates / ((this.#lastAt - this.#firstAt) / 1000),
      cpuMicrosPerEvent: ((cpuSeconds() - cpu0) * 1e6) / this.updates,
    });
  }
}
