/**
 * Tracing end to end: the AppService controller in a Manager on a real local control plane, with an in-memory span
 * exporter. A traced client creates an AppService stamped with its trace context; the first reconcile's span tree is
 * the one docs/observability.md shows, its attributes are the documented ones, and it links to the client's span.
 *
 * `OPKIT_UPDATE_DOCS=1` rewrites the picture (docs/observability-trace.svg) from this run's spans.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { context, type SpanContext, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { Manager } from '@opkit/runtime';
import { Client, loadConfig } from '@opkit/runtime/client';
import { ConfigMaps } from '@opkit/runtime/kinds';
import { silentLogger } from '@opkit/runtime/manager';
import { TRACE_ATTRIBUTES as ATTR, TRACEPARENT_ANNOTATION, traceContextAnnotations } from '@opkit/runtime/tracing';
import { type Environment, start, waitFor } from '@opkit/testenv';
import { AppServices } from '../src/api/v1alpha1/appservice.ts';
import { setupAppServiceController } from '../src/controllers/appservice.ts';
import { installApiAndRbac } from '../src/install.ts';
import { outline, subtree, waterfallSvg } from './trace-picture.ts';

const DOC = new URL('../../../docs/observability.md', import.meta.url);
const PICTURE = new URL('../../../docs/observability-trace.svg', import.meta.url);

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
let env: Environment;
let client: Client;

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  env = await start({ nodes: 1, log: () => {} });
  client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'traced-client' });
  await installApiAndRbac(client);
});
after(async () => {
  client?.close();
  await env?.stop();
  trace.disable();
  context.disable();
});

/** The outline between the `trace-tree` markers of docs/observability.md. */
function documentedTree(): string {
  const doc = readFileSync(DOC, 'utf8');
  const m = /<!-- trace-tree:start -->\s*```text\n([\s\S]*?)```\s*<!-- trace-tree:end -->/.exec(doc);
  assert.ok(m?.[1], 'docs/observability.md has a ```text block between the trace-tree markers');
  return m[1].trimEnd();
}

test('one AppService reconcile: the span tree docs/observability.md shows, linked to the change that caused it', async () => {
  const mgr = new Manager({
    name: 'appservice-operator',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
    controllers: { traceContextFromAnnotations: true },
  });
  setupAppServiceController(mgr);
  const stop = new AbortController();
  const running = mgr.start(stop.signal);
  const tracer = trace.getTracer('deploy-pipeline');
  let deploySpan: SpanContext;
  try {
    deploySpan = await tracer.startActiveSpan('deploy sample', async (span) => {
      await client.create(AppServices, {
        metadata: { name: 'sample', namespace: 'default', annotations: traceContextAnnotations() },
        spec: { replicas: 2, image: 'busybox' },
      } as never);
      span.end();
      return span.spanContext();
    });
    await waitFor(
      'the AppService to report 2 ready pods',
      async () => (await client.get(AppServices, { namespace: 'default', name: 'sample' })).status?.readyReplicas === 2,
      60_000,
    );
  } finally {
    stop.abort();
    await running;
  }
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();

  const created = spans.find((s) => s.name === 'create appservices');
  assert.equal(created?.parentSpanContext?.spanId, deploySpan.spanId, "the client's own request nests under its span");
  assert.equal(
    (await client.get(AppServices, { namespace: 'default', name: 'sample' })).metadata.annotations?.[
      TRACEPARENT_ANNOTATION
    ],
    `00-${deploySpan.traceId}-${deploySpan.spanId}-01`,
  );

  const reconciles = spans
    .filter((s) => s.name === 'reconcile appservice' && s.attributes[ATTR.objectKey] === 'default/sample')
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  const first = reconciles[0];
  assert.ok(first, 'a reconcile span');
  assert.equal(first.parentSpanContext, undefined, 'a reconcile is the root of its own trace');
  assert.notEqual(first.spanContext().traceId, deploySpan.traceId);
  assert.deepEqual(
    first.links.map((l) => [l.context.traceId, l.context.spanId]),
    [[deploySpan.traceId, deploySpan.spanId]],
    "linked to the client's span through the annotation",
  );
  assert.equal(first.attributes[ATTR.controller], 'appservice');
  assert.equal(first.attributes[ATTR.namespace], 'default');
  assert.equal(first.attributes[ATTR.objectName], 'sample');
  assert.match(String(first.attributes[ATTR.reconcileId]), /^[0-9a-f-]{36}$/);
  assert.equal(typeof first.attributes[ATTR.queueWaitMs], 'number');
  assert.equal(first.attributes[ATTR.result], 'success');

  const nodes = subtree(first, spans);
  for (const { span, depth } of nodes.slice(1)) {
    assert.equal(depth, 1, `${span.name}: API requests are children of the reconcile`);
    assert.equal(span.attributes[ATTR.method] !== undefined, true);
    assert.equal(typeof span.attributes[ATTR.statusCode], 'number');
  }
  // siblings that start in the same millisecond (the status patch and the Event write) may come in either order
  assert.deepEqual(
    outline(nodes).split('\n').sort(),
    documentedTree().split('\n').sort(),
    'the span tree is the one docs/observability.md shows',
  );

  if (process.env.OPKIT_UPDATE_DOCS === '1') {
    writeFileSync(
      PICTURE,
      waterfallSvg(nodes, 'reconcile appservice default/sample: the first reconcile of a new AppService (replicas: 2)'),
    );
  }
});

test('a kind first read inside a traced reconcile: its informer’s list and watch make no span under that reconcile', async () => {
  exporter.reset();
  const mgr = new Manager({
    name: 'reader',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
  });
  let read = 0;
  mgr
    .controller()
    .named('reader')
    .for(AppServices)
    .complete({
      async reconcile(_req, ctx) {
        // ConfigMaps are watched by no controller: this read starts their informer, from inside the reconcile
        await ctx.cache.list(ConfigMaps, { namespace: 'default' });
        read++;
        return {};
      },
    });
  const stop = new AbortController();
  const running = mgr.start(stop.signal);
  try {
    await waitFor('a reconcile that read ConfigMaps', async () => read > 0, 30_000);
    // a change after the reconcile ended reaches the informer through its watch
    await client.create(ConfigMaps, { metadata: { name: 'after', namespace: 'default' }, data: {} } as never);
    await waitFor(
      'the informer to see the ConfigMap',
      async () =>
        mgr.cache
          .informer(ConfigMaps)
          .store.list()
          .some((c) => c.metadata.name === 'after') || undefined,
      30_000,
    );
  } finally {
    stop.abort();
    await running;
  }
  await provider.forceFlush();
  const spans = exporter.getFinishedSpans();
  const reconciles = spans.filter((s) => s.name === 'reconcile reader');
  assert.ok(reconciles.length > 0, 'the reconcile was traced');
  const under = reconciles.flatMap((r) => subtree(r, spans).slice(1)).map(({ span }) => span.name);
  assert.deepEqual(
    under.filter((name) => name.includes('configmaps')),
    [],
    'the informer started by the reconcile runs outside its trace',
  );
  assert.deepEqual(
    spans.filter((s) => s.name.includes('configmaps') && s.name !== 'create configmaps').map((s) => s.name),
    [],
    'no informer request makes a span at all',
  );
});
