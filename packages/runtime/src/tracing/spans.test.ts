/**
 * Tracing without a control plane: the request-path parser, the traceparent annotations, "no provider, no span",
 * and request spans (status, resends, errors) against a scripted HTTP server on loopback.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PerformanceObserver } from 'node:perf_hooks';
import { after, test } from 'node:test';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { isApiError } from '../client/errors.ts';
import { Transport } from '../client/transport.ts';
import {
  ATTR,
  detachedFromTrace,
  endReconcileSpan,
  endRequestSpan,
  requestInfo,
  runtimeTracer,
  type Span,
  spanContextFromAnnotations,
  startReconcileSpan,
  startRequestSpan,
  TRACEPARENT_ANNOTATION,
  TRACESTATE_ANNOTATION,
  traceContextAnnotations,
} from './spans.ts';

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
  trace.disable();
  context.disable();
});

test('no provider: the off path allocates nothing (a million calls, no garbage collection)', async () => {
  // A path that allocates even 16 bytes a call fills the young generation many times over in a million calls, so
  // every attempt would see a scavenge. A collection the loop did not cause (the JIT tiering the loop up, a heap
  // left nearly full by the tests before) can land in one attempt, not in three warmed-up ones in a row.
  const url = new URL('https://127.0.0.1:6443');
  let seen = 0;
  const calls = (n: number): void => {
    for (let i = 0; i < n; i++) {
      if (runtimeTracer() !== undefined) seen++;
      if (startRequestSpan('GET', '/api/v1/namespaces/ns/pods/p', url) !== undefined) seen++;
    }
  };
  calls(100_000);
  const during: number[][] = [];
  for (let attempt = 0; attempt < 3; attempt++) {
    const gcs: number[] = [];
    const obs = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) gcs.push(e.startTime);
    });
    obs.observe({ entryTypes: ['gc'] });
    const from = performance.now();
    calls(1_000_000);
    const to = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
    obs.disconnect();
    during.push(gcs.filter((t) => t >= from && t <= to));
    if (during.at(-1)?.length === 0) break;
  }
  assert.equal(seen, 0);
  assert.ok(
    during.some((g) => g.length === 0),
    `no garbage collection ran during one of three loops (collections per loop: ${during.map((g) => g.length).join(', ')})`,
  );
});

test('requestInfo resolves paths as the apiserver does', () => {
  const cases: [string, string, ReturnType<typeof requestInfo>][] = [
    ['GET', '/api/v1/namespaces/ns/pods', { verb: 'list', resource: 'pods', group: '', namespace: 'ns' }],
    ['GET', '/api/v1/namespaces/ns/pods/p', { verb: 'get', resource: 'pods', group: '', namespace: 'ns', name: 'p' }],
    ['GET', '/api/v1/pods', { verb: 'list', resource: 'pods', group: '' }],
    ['GET', '/api/v1/namespaces/ns', { verb: 'get', resource: 'namespaces', group: '', namespace: 'ns', name: 'ns' }],
    [
      'PUT',
      '/api/v1/namespaces/ns/finalize',
      { verb: 'update', resource: 'namespaces/finalize', group: '', namespace: 'ns', name: 'ns' },
    ],
    [
      'PATCH',
      '/apis/opkit.dev/v1/namespaces/ns/appservices/a/status',
      { verb: 'patch', resource: 'appservices/status', group: 'opkit.dev', namespace: 'ns', name: 'a' },
    ],
    [
      'POST',
      '/apis/events.k8s.io/v1/namespaces/ns/events',
      { verb: 'create', resource: 'events', group: 'events.k8s.io', namespace: 'ns' },
    ],
    [
      'DELETE',
      '/api/v1/namespaces/ns/pods',
      { verb: 'deletecollection', resource: 'pods', group: '', namespace: 'ns' },
    ],
    [
      'DELETE',
      '/api/v1/namespaces/ns/pods/p',
      { verb: 'delete', resource: 'pods', group: '', namespace: 'ns', name: 'p' },
    ],
    [
      'GET',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y',
      { verb: 'get', resource: 'customresourcedefinitions', group: 'apiextensions.k8s.io', name: 'x.y' },
    ],
    ['GET', '/apis/events.k8s.io/v1', { verb: 'get' }],
    ['GET', '/version', { verb: 'get' }],
  ];
  for (const [method, path, want] of cases) assert.deepEqual(requestInfo(method, path), want, `${method} ${path}`);
});

test('traceparent annotations: formatted from a span context and parsed back; malformed values are ignored', () => {
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const spanId = 'b7ad6b7169203331';
  const ctx = trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: 1 });
  const annotations = traceContextAnnotations(ctx);
  assert.deepEqual(annotations, { [TRACEPARENT_ANNOTATION]: `00-${traceId}-${spanId}-01` });
  assert.deepEqual(spanContextFromAnnotations(annotations), { traceId, spanId, traceFlags: 1, isRemote: true });
  const withState = spanContextFromAnnotations({ ...annotations, [TRACESTATE_ANNOTATION]: 'vendor=abc' });
  assert.equal(withState?.traceState?.get('vendor'), 'abc');
  assert.deepEqual(traceContextAnnotations(ROOT_CONTEXT), {}, 'no span context, no annotations');
  const bad = [
    'garbage',
    `00-${'0'.repeat(32)}-${spanId}-01`, // all-zero trace id
    `00-${traceId}-${'0'.repeat(16)}-01`, // all-zero span id
    `ff-${traceId}-${spanId}-01`, // version ff
    `00-${traceId}-${spanId}-01-extra`, // version 00 has exactly four fields
    `00-${traceId.toUpperCase()}-${spanId}-01`, // upper case is invalid
  ];
  for (const value of bad) assert.equal(spanContextFromAnnotations({ [TRACEPARENT_ANNOTATION]: value }), undefined);
  assert.equal(
    spanContextFromAnnotations({ [TRACEPARENT_ANNOTATION]: `01-${traceId}-${spanId}-01-later` })?.traceId,
    traceId,
    'a later version may append fields',
  );
});

test('no provider registered: no tracer, no request span (then a registered provider turns both on)', async () => {
  assert.equal(runtimeTracer(), undefined);
  assert.equal(startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443')), undefined);

  const { exporter } = register();
  const tracer = runtimeTracer();
  assert.ok(tracer, 'a registered provider turns tracing on');
  assert.equal(runtimeTracer(), tracer, 'the tracer is cached');
  assert.equal(
    startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443')),
    undefined,
    'no active span: requests outside a traced operation make no span',
  );
  const parent = tracer.startSpan('parent');
  const child = context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
    startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443')),
  );
  assert.ok(child);
  child.end();
  parent.end();
  const late = context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
    startRequestSpan('POST', '/apis/events.k8s.io/v1/namespaces/ns/events', new URL('https://127.0.0.1:6443')),
  );
  assert.ok(late, 'a request that outlives its (sampled) parent is still its child');
  late.end();
  const unsampled = trace.wrapSpanContext({ ...parent.spanContext(), traceFlags: 0 });
  assert.equal(
    context.with(trace.setSpan(ROOT_CONTEXT, unsampled), () =>
      startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443')),
    ),
    undefined,
    'an unsampled parent: no span',
  );
  const [span] = exporter.getFinishedSpans();
  assert.equal(span?.name, 'list pods');
  assert.equal(span?.kind, SpanKind.CLIENT);
  assert.equal(span?.parentSpanContext?.spanId, parent.spanContext().spanId);
  assert.equal(span?.attributes[ATTR.serverPort], 6443);
});

test('a request span records the final status code, the resends, and a failure', async () => {
  const { exporter } = register();
  const server = createServer((req, res) => {
    const nth = Number(req.headers['x-nth'] ?? 0);
    if (req.url?.includes('/throttled') && counts.throttled++ < 2) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' });
      res.end(JSON.stringify({ kind: 'Status', code: 429, reason: 'TooManyRequests' }));
      return;
    }
    if (req.url?.includes('/missing')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound', message: `missing ${nth}` }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  const counts = { throttled: 0 };
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const t = new Transport({
    config: {
      server: url,
      auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
      namespace: 'default',
      contextName: 't',
    },
    userAgent: 'test',
  });
  const tracer = runtimeTracer();
  assert.ok(tracer);
  const parent = tracer.startSpan('reconcile test');
  await context.with(trace.setSpan(ROOT_CONTEXT, parent), async () => {
    await t.request({ method: 'GET', path: '/api/v1/namespaces/ns/configmaps/throttled' });
    await assert.rejects(t.request({ method: 'GET', path: '/api/v1/namespaces/ns/configmaps/missing' }), (err) =>
      isApiError(err, 'NotFound'),
    );
  });
  parent.end();
  t.close();
  const [throttled, missing] = exporter.getFinishedSpans();
  assert.equal(throttled?.name, 'get configmaps');
  assert.equal(throttled?.attributes[ATTR.statusCode], 200);
  assert.equal(throttled?.attributes[ATTR.resendCount], 2, 'two 429s, then the answer');
  assert.equal(throttled?.attributes[ATTR.namespace], 'ns');
  assert.equal(throttled?.status.code, SpanStatusCode.UNSET);
  assert.equal(missing?.attributes[ATTR.statusCode], 404);
  assert.equal(missing?.attributes[ATTR.errorType], 'NotFound');
  assert.equal(missing?.attributes[ATTR.resendCount], undefined);
  assert.equal(missing?.status.code, SpanStatusCode.ERROR);
});

test('a reconciler that throws null or undefined: the span says error, and ending it never throws', () => {
  const { exporter } = register();
  const tracer = runtimeTracer();
  assert.ok(tracer);
  const input = { controller: 'c', key: 'ns/a', namespace: 'ns', name: 'a', reconcileID: 'r', queueWaitMs: 0 };
  for (const thrown of [null, undefined, 'text', Object.create(null)]) {
    const span = startReconcileSpan(tracer, input);
    assert.doesNotThrow(() => endReconcileSpan(span, { failed: true, error: thrown }));
  }
  const request = startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443'));
  assert.equal(request, undefined, 'no active span');
  const parent = tracer.startSpan('parent');
  const child = context.with(trace.setSpan(ROOT_CONTEXT, parent), () =>
    startRequestSpan('GET', '/api/v1/pods', new URL('https://127.0.0.1:6443')),
  );
  assert.ok(child);
  assert.doesNotThrow(() => endRequestSpan(child, { failed: true, error: null }));
  parent.end();
  const spans = exporter.getFinishedSpans();
  assert.deepEqual(
    spans.filter((s) => s.name === 'reconcile c').map((s) => [s.attributes[ATTR.result], s.status.code]),
    Array.from({ length: 4 }, () => ['error', SpanStatusCode.ERROR]),
  );
  assert.deepEqual(
    spans.filter((s) => s.name === 'reconcile c').map((s) => s.status.message),
    ['null', 'undefined', 'text', '[object Object]'],
  );
  assert.equal(spans.find((s) => s.name === 'list pods')?.status.code, SpanStatusCode.ERROR);
});

test('detachedFromTrace: work started inside a span runs outside any trace, and so do its later requests', async () => {
  register();
  const tracer = runtimeTracer();
  assert.ok(tracer);
  const url = new URL('https://127.0.0.1:6443');
  const reconcile = tracer.startSpan('reconcile');
  const { attached, detached } = await context.with(trace.setSpan(ROOT_CONTEXT, reconcile), async () => {
    // a long-lived loop, as an informer's: its later requests happen after the span has ended
    const later = () =>
      new Promise<Span | undefined>((resolve) =>
        setTimeout(() => resolve(startRequestSpan('GET', '/api/v1/pods', url)), 5),
      );
    return { attached: later(), detached: detachedFromTrace(later) };
  });
  reconcile.end();
  const a = await attached;
  assert.ok(a, 'without detaching, the loop inherits the reconcile span');
  a.end();
  assert.equal(await detached, undefined, 'detached: no span');
});

/** Registers (once) a provider exporting to memory and an AsyncLocalStorage context manager; clears the exporter. */
function register(): { exporter: InMemorySpanExporter } {
  if (!registered) {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    registered = { exporter };
  }
  registered.exporter.reset();
  return registered;
}
let registered: { exporter: InMemorySpanExporter } | undefined;

test('an operator that never registers anything with @opentelemetry/api never loads it', () => {
  // a fresh process: the runtime's entry, a transport request path, and the off-path calls, with every resolve recorded
  const code = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve: (s, c, next) => { const r = next(s, c); seen.push(r.url); return r; } });
    const spans = await import(${JSON.stringify(new URL('./spans.ts', import.meta.url).href)});
    await import(${JSON.stringify(new URL('../index.ts', import.meta.url).href)});
    spans.detachedFromTrace(() => spans.startRequestSpan('GET', '/api/v1/pods', new URL('https://x')));
    if (spans.runtimeTracer() !== undefined || Object.keys(spans.traceContextAnnotations()).length > 0) process.exit(3);
    console.log(JSON.stringify(seen.filter((u) => u.includes('@opentelemetry'))));`;
  const r = spawnSync(process.execPath, ['--conditions=@opkit/source', '--input-type=module', '-e', code], {
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), [], 'no module of @opentelemetry loaded');
});
