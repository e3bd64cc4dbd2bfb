/**
 * Micro-benchmark: what tracing costs a reconcile and an API request, with no provider registered (`off`) and with
 * an SDK provider (`on`), against the same code without the tracing lines (`baseline`, reconcile only). Also counts
 * garbage collections during millions of off-path calls: none means the off path allocates nothing.
 *
 *   ./node_modules/.bin/node --conditions=@opkit/source packages/runtime/test/tracing-overhead.bench.ts
 *
 * Rounds alternate the modes; each figure is the median of 7 rounds.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { TracerProvider } from '@opentelemetry/sdk-trace';
import { ConfigMaps } from '../src/client/builtins.ts';
import { Client } from '../src/client/client.ts';
import {
  endReconcileSpan,
  runtimeTracer,
  startReconcileSpan,
  startRequestSpan,
  withActiveSpan,
} from '../src/tracing/spans.ts';

const ROUNDS = 7;
const RECONCILES = 200_000;
const REQUESTS = 3_000;
const OFF_PATH_CALLS = 5_000_000;

type Mode = 'baseline' | 'off' | 'on';
const provider = new TracerProvider();

function setMode(mode: Mode): void {
  trace.disable();
  if (mode === 'on') trace.setGlobalTracerProvider(provider);
}

const request = { namespace: 'default', name: 'sample' };
const reconcile = async (_req: typeof request, _ctx: object) => ({});
const ctx = {};

/** The lines the controller runs per reconcile (controller.ts #process), or none of them for the baseline. */
async function reconcileLoop(mode: Mode): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < RECONCILES; i++) {
    if (mode === 'baseline') {
      await reconcile(request, ctx);
      continue;
    }
    const tracer = runtimeTracer();
    const span =
      tracer &&
      startReconcileSpan(tracer, {
        controller: 'appservice',
        key: 'default/sample',
        namespace: request.namespace,
        name: request.name,
        reconcileID: 'id',
        queueWaitMs: 1,
        annotations: undefined,
      });
    const result = await (span ? withActiveSpan(span, reconcile, undefined, request, ctx) : reconcile(request, ctx));
    if (span) endReconcileSpan(span, { requeueAfterMs: (result as { requeueAfterMs?: number }).requeueAfterMs });
  }
  return ((performance.now() - t0) * 1e6) / RECONCILES; // ns per reconcile
}

async function requestLoop(client: Client, inSpan: boolean): Promise<number> {
  const run = async () => {
    const t0 = performance.now();
    for (let i = 0; i < REQUESTS; i++) await client.get(ConfigMaps, request);
    return ((performance.now() - t0) * 1000) / REQUESTS; // µs per request
  };
  const tracer = runtimeTracer();
  if (!inSpan || !tracer) return run();
  const parent = tracer.startSpan('reconcile bench');
  try {
    return await context.with(trace.setSpan(ROOT_CONTEXT, parent), run);
  } finally {
    parent.end();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

async function main(): Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sample","namespace":"default"},"data":{"a":"b"}}',
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new Client({
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'bench',
  });

  // garbage collections during the off path (no provider): each would mean allocation
  setMode('off');
  const gcs: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e.startTime);
  });
  obs.observe({ entryTypes: ['gc'] });
  const url = new URL('https://127.0.0.1:6443');
  const from = performance.now();
  let sink = 0;
  for (let i = 0; i < OFF_PATH_CALLS; i++) {
    if (runtimeTracer() !== undefined) sink++;
    if (startRequestSpan('GET', '/api/v1/namespaces/default/configmaps/sample', url) !== undefined) sink++;
  }
  const to = performance.now();
  await new Promise((r) => setTimeout(r, 100));
  obs.disconnect();
  const offPathGcs = gcs.filter((t) => t >= from && t <= to).length;
  const offPathNs = ((to - from) * 1e6) / OFF_PATH_CALLS;

  const rec: Record<Mode, number[]> = { baseline: [], off: [], on: [] };
  const req: Record<'off' | 'on (no parent span)' | 'on (in a span)', number[]> = {
    off: [],
    'on (no parent span)': [],
    'on (in a span)': [],
  };
  for (let round = 0; round < ROUNDS; round++) {
    const order: Mode[] = round % 2 === 0 ? ['baseline', 'off', 'on'] : ['on', 'off', 'baseline'];
    for (const mode of order) {
      setMode(mode);
      rec[mode].push(await reconcileLoop(mode));
    }
    setMode('off');
    req.off.push(await requestLoop(client, false));
    setMode('on');
    req['on (no parent span)'].push(await requestLoop(client, false));
    req['on (in a span)'].push(await requestLoop(client, true));
  }
  client.close();
  server.close();

  const lines = [
    `Node ${process.version}, ${ROUNDS} rounds, median (min–max)`,
    '',
    '| path | mode | cost |',
    '| --- | --- | --- |',
    ...(['baseline', 'off', 'on'] as const).map(
      (m) =>
        `| reconcile (tracing lines only, no-op reconciler) | ${m} | ${median(rec[m]).toFixed(0)} ns (${Math.min(...rec[m]).toFixed(0)}–${Math.max(...rec[m]).toFixed(0)}) |`,
    ),
    ...(Object.keys(req) as (keyof typeof req)[]).map(
      (m) =>
        `| API request (loopback GET) | ${m} | ${median(req[m]).toFixed(1)} µs (${Math.min(...req[m]).toFixed(1)}–${Math.max(...req[m]).toFixed(1)}) |`,
    ),
    `| off path: runtimeTracer() + startRequestSpan() | off | ${offPathNs.toFixed(1)} ns per pair; ${offPathGcs} garbage collections in ${OFF_PATH_CALLS.toLocaleString('en')} pairs |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (sink < 0) process.stdout.write('');
}

await main();
