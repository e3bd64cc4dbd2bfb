/**
 * @module children/hops
 * Preloaded into the operator under test (`--import`, when the benchmark runs with BENCH_HOPS=DIR): follows each
 * change of an AppService through the operator on opkit's `node:diagnostics_channel` hops (see
 * packages/runtime/src/internal/hops.ts) — watch event decoded → enqueued (store and handlers) → handed to a worker
 * (queue wait) → done (the reconcile and its writes) — and records GC pauses and event-loop delay. On SIGUSR2 it
 * writes the quantiles of each hop since the last SIGUSR2 to OPKIT_HOPS_FILE-<n>.json and starts over (the churn
 * benchmark sends one before each rate and after the last).
 */
import { subscribe } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';

interface HopMessage {
  readonly key: string;
  readonly at: number;
  readonly resource?: string;
}

interface Trace {
  event: number;
  add?: number;
  get?: number;
}

const traces = new Map<string, Trace>();
const fresh = () => ({
  handler: [] as number[],
  queueWait: [] as number[],
  reconcile: [] as number[],
  total: [] as number[],
});
let samples = fresh();
/** Keys handed to workers (reconciles) and AppService watch events, in the period. */
let counts = { reconciles: 0, appServiceEvents: 0 };
/** Client-side time of each non-watch request (Node's own http client channels), by method and resource. */
let requests = new Map<string, number[]>();
const started = new WeakMap<object, { at: number; what: string }>();
subscribe('http.client.request.start', (m) => {
  const { request } = m as { request: { method: string; path: string } };
  if (request.path.includes('watch=')) return;
  const parts = (request.path.split('?')[0] ?? '').split('/');
  const ns = parts.indexOf('namespaces');
  const kind = `${parts[ns >= 0 ? ns + 2 : parts.length - 1] ?? ''}${parts.at(-1) === 'status' ? '/status' : ''}`;
  started.set(request, { at: performance.now(), what: `${request.method} ${kind}` });
});
subscribe('http.client.response.finish', (m) => {
  const { request } = m as { request: object };
  const s = started.get(request);
  if (!s) return;
  const list = requests.get(s.what) ?? [];
  list.push(performance.now() - s.at);
  requests.set(s.what, list);
});
let gc: number[] = [];

subscribe('opkit:cache:event', (m) => {
  const h = m as HopMessage;
  if (h.resource !== 'appservices') return;
  counts.appServiceEvents += 1;
  traces.set(h.key, { event: h.at });
});
subscribe('opkit:workqueue:add', (m) => {
  const h = m as HopMessage;
  const t = traces.get(h.key);
  if (t && t.add === undefined) t.add = h.at;
});
subscribe('opkit:workqueue:get', (m) => {
  const h = m as HopMessage;
  counts.reconciles += 1;
  const t = traces.get(h.key);
  if (t?.add !== undefined && t.get === undefined) t.get = h.at;
});
subscribe('opkit:workqueue:done', (m) => {
  const h = m as HopMessage;
  const t = traces.get(h.key);
  if (t?.add === undefined || t.get === undefined) return;
  traces.delete(h.key);
  samples.handler.push(t.add - t.event);
  samples.queueWait.push(t.get - t.add);
  samples.reconcile.push(h.at - t.get);
  samples.total.push(h.at - t.event);
});
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gc.push(e.duration);
}).observe({ entryTypes: ['gc'] });
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * p) - 1))] ?? 0) * 100) / 100;
};
const summary = (xs: number[]) => ({ n: xs.length, p50: q(xs, 0.5), p99: q(xs, 0.99), max: q(xs, 1) });

let period = 0;
process.on('SIGUSR2', () => {
  const file = process.env.OPKIT_HOPS_FILE;
  if (!file) return;
  const out = {
    unit: 'ms',
    ...counts,
    requests: Object.fromEntries([...requests].map(([k, v]) => [k, summary(v)])),
    hops: Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summary(v)])),
    gc: { ...summary(gc), totalMs: Math.round(gc.reduce((a, b) => a + b, 0)) },
    eventLoopDelay: {
      p50: Math.round(loop.percentile(50) / 1e4) / 100,
      p99: Math.round(loop.percentile(99) / 1e4) / 100,
      max: Math.round(loop.max / 1e4) / 100,
    },
  };
  writeFileSync(`${file}-${period++}.json`, `${JSON.stringify(out, null, 2)}\n`);
  samples = fresh();
  counts = { reconciles: 0, appServiceEvents: 0 };
  requests = new Map();
  gc = [];
  loop.reset();
});
