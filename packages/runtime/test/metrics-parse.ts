/**
 * @module test/metrics-parse
 * Parses Prometheus text exposition into `series → value` (series written as `name{label="v",…}` with labels sorted).
 */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = [...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
      .map((l) => `${l[1]}="${l[2]}"`)
      .sort()
      .join(',');
    out.set(labels ? `${m[1]}{${labels}}` : (m[1] as string), Number(m[4]));
  }
  return out;
}

/** The sum of every series of `name` whose labels include all of `match`. */
export function sumOf(metrics: Map<string, number>, name: string, match: Record<string, string> = {}): number {
  let total = 0;
  for (const [series, value] of metrics) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (Object.entries(match).every(([k, v]) => series.includes(`${k}="${v}"`))) total += value;
  }
  return total;
}
