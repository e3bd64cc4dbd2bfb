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
