/**
 * @module test/trace-picture
 * Pictures of finished spans, for docs/observability.md: the span tree as an indented outline (what the tracing test
 * compares with the docs), and a waterfall SVG (bars on a shared time axis, one row per span, depth-indented).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace';

/** Start time in ms since the epoch (hrtime is [seconds, nanoseconds]). */
const ms = (t: readonly [number, number]): number => t[0] * 1000 + t[1] / 1e6;

export interface SpanNode {
  readonly span: ReadableSpan;
  readonly depth: number;
}

/** The span `root` and its descendants among `spans`, depth-first, siblings by start time. */
export function subtree(root: ReadableSpan, spans: readonly ReadableSpan[]): SpanNode[] {
  const children = new Map<string, ReadableSpan[]>();
  for (const s of spans) {
    const parent = s.parentSpanContext?.spanId;
    if (parent === undefined) continue;
    const list = children.get(parent) ?? [];
    list.push(s);
    children.set(parent, list);
  }
  const out: SpanNode[] = [];
  const walk = (s: ReadableSpan, depth: number) => {
    out.push({ span: s, depth });
    const kids = [...(children.get(s.spanContext().spanId) ?? [])].sort((a, b) => ms(a.startTime) - ms(b.startTime));
    for (const k of kids) walk(k, depth + 1);
  };
  walk(root, 0);
  return out;
}

/** The outline: one line per span, two spaces of indent per level, the span's name. */
export function outline(nodes: readonly SpanNode[]): string {
  return nodes.map((n) => `${'  '.repeat(n.depth)}${n.span.name}`).join('\n');
}

const ROW = 26;
const LABEL = 250;
const WIDTH = 860;

const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A waterfall of `nodes` with a caption; each bar is labelled with the span's duration. */
export function waterfallSvg(nodes: readonly SpanNode[], caption: string): string {
  const start = Math.min(...nodes.map((n) => ms(n.span.startTime)));
  const end = Math.max(...nodes.map((n) => ms(n.span.endTime)));
  const scale = (WIDTH - LABEL - 90) / Math.max(1, end - start);
  const height = (nodes.length + 2) * ROW + 10;
  const rows = nodes.map((n, i) => {
    const y = (i + 1) * ROW + 6;
    const x = LABEL + (ms(n.span.startTime) - start) * scale;
    const w = Math.max(2, (ms(n.span.endTime) - ms(n.span.startTime)) * scale);
    const kind = n.depth === 0 ? '#4063d8' : '#389826';
    const took = `${(ms(n.span.endTime) - ms(n.span.startTime)).toFixed(1)} ms`;
    return [
      `<text x="${10 + n.depth * 16}" y="${y + 14}">${xml(n.span.name)}</text>`,
      `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${ROW - 8}" rx="3" fill="${kind}"/>`,
      `<text x="${(x + w + 6).toFixed(1)}" y="${y + 14}" fill="#555">${took}</text>`,
    ].join('');
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<title>${xml(caption)}</title>`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="18" font-weight="bold">${xml(caption)}</text>`,
    ...rows,
    `<text x="10" y="${height - 8}" fill="#555">0 ms … ${(end - start).toFixed(1)} ms; blue: the reconcile span, green: API requests (CLIENT spans)</text>`,
    '</svg>',
    '',
  ].join('\n');
}
