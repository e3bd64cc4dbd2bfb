/**
 * @module scrape
 * Reading a process's Prometheus text exposition from outside: `scrape(url)` fetches it (2 s deadline) and parses
 * each sample line into its name, labels and value; `total(samples, name)` sums one metric over its series.
 *
 * Caveats: comments (`# HELP`, `# TYPE`) and timestamps are dropped; a metric that is not exposed sums to
 * `undefined`, so a caller can tell "0" from "missing" (for a runtime that does not have it yet).
 */

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a text exposition. */
export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = (l[2] as string).replace(/\\(.)/g, '$1');
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The samples served at `url`; rejects when it does not answer 200 within 2 s. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return parseExposition(await res.text());
}

/** The sum of metric `name` over its series, or `undefined` when no series of it is exposed. */
export function total(samples: readonly Sample[], name: string): number | undefined {
  const mine = samples.filter((s) => s.name === name);
  return mine.length === 0 ? undefined : mine.reduce((sum, s) => sum + s.value, 0);
}

/** Metric `name` by the value of its label `label` (series without it are left out). */
export function byLabel(samples: readonly Sample[], name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    const key = s.labels[label];
    if (s.name === name && key !== undefined) out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}
