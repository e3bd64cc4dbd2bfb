/**
 * @module scripts/file-times
 * A reporter for Node's test runner that writes, for each test file, one JSON line: the file (as the runner names it),
 * its wall time in seconds from its process's start to its end (the runner's per-file `test:summary`: hooks and
 * control-plane starts included) and its test count. `npm test` adds it to each lane (scripts/lanes.ts) and prints the
 * slowest files at the end (`slowest`), so a file that grows is seen in the run that made it grow.
 */

/** One test file's time. */
export interface FileTime {
  readonly file: string;
  readonly seconds: number;
  readonly tests: number;
}

interface SummaryEvent {
  readonly type: string;
  readonly data?: {
    readonly file?: string;
    readonly duration_ms?: number;
    readonly counts?: { readonly tests?: number };
  };
}

/** The reporter (Node calls the default export with the run's events). */
export default async function* fileTimes(source: AsyncIterable<SummaryEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    const d = event.data;
    if (event.type !== 'test:summary' || d?.file === undefined) continue; // the last summary is the whole run's
    const time: FileTime = {
      file: d.file,
      seconds: Math.round((d.duration_ms ?? 0) / 100) / 10,
      tests: d.counts?.tests ?? 0,
    };
    yield `${JSON.stringify(time)}\n`;
  }
}

/** Reads the reporter's output; a line that is not one of its own is skipped. */
export function parseFileTimes(text: string): FileTime[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        const t = JSON.parse(line) as Partial<FileTime>;
        return typeof t.file === 'string' && typeof t.seconds === 'number'
          ? [{ file: t.file, seconds: t.seconds, tests: t.tests ?? 0 }]
          : [];
      } catch {
        return [];
      }
    });
}

/** The `n` slowest files, slowest first, as lines for the end of `npm test`, their paths relative to `root`. */
export function slowest(times: readonly FileTime[], n: number, root: string): string[] {
  const total = times.reduce((s, t) => s + t.seconds, 0);
  const prefix = root.endsWith('/') ? root : `${root}/`;
  const rows = [...times]
    .sort((a, b) => b.seconds - a.seconds || a.file.localeCompare(b.file))
    .slice(0, n)
    .map((t) => {
      const file = t.file.startsWith(prefix) ? t.file.slice(prefix.length) : t.file;
      return `${t.seconds.toFixed(1).padStart(7)} s  ${String(t.tests).padStart(3)} tests  ${file}`;
    });
  return [
    `the ${rows.length} slowest of ${times.length} test files (${total.toFixed(1)} s in all, lanes overlap):`,
    ...rows,
  ];
}
