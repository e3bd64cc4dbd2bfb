import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { type ConfigMap, ConfigMaps, EventsV1Events, Namespaces } from '../src/client/builtins.ts';
import { type Client, resource } from '../src/client/index.ts';
import { generationChanged } from '../src/controller/index.ts';
import { finalizer, objectReference, updateStatusIfChanged } from '../src/helpers/index.ts';
import { done, getCondition, isApiError, Manager, ManagerError, setCondition } from '../src/index.ts';
import { fieldErrors, validator } from '../src/webhook/admission.ts';
import { parseMetrics, sumOf } from './metrics-parse.ts';
import { clientVia, installWidgetCrd, recordingLogger, startEnv, type Widget, Widgets, waitFor } from './support.ts';

const get = async (address: string | undefined, path: string) => {
  const res = await fetch(`http://${address}${path}`);
  return { status: res.status, text: await res.text() };
};

describe('manager against a real apiserver', () => {
  let env: Environment;
  let client: Client;
  before(async () => {
    ({ env, client } = await startEnv());
    await installWidgetCrd(client);
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  async function manager(name: string, namespace: string, via: Client = client) {
    await client.create(Namespaces, { metadata: { name: namespace } }).catch(() => {});
    return Manager.create({
      name,
      client: via,
      log: recordingLogger(),
      metrics: { bindAddress: '127.0.0.1:0', secure: false },
      health: { bindAddress: '127.0.0.1:0' },
      cache: { namespace },
    });
  }

  test('metrics: controller-runtime series move as reconciles happen; conditions and status are written only on change', async () => {
    const mgr = await Manager.create({
      name: 'metrics-op',
      kubeconfig: { path: env.kubeconfigPath },
      log: recordingLogger(),
      metrics: { bindAddress: '127.0.0.1:0', secure: false },
      health: { bindAddress: '127.0.0.1:0' },
      cache: { namespace: 'mx' },
    });
    await client.create(Namespaces, { metadata: { name: 'mx' } });
    let reconciles = 0;
    mgr
      .controller()
      .for(Widgets)
      .complete(async (req, ctx) => {
        reconciles += 1;
        const w = await ctx.cache.get(Widgets, req);
        if (!w) return done();
        const ready = w.spec?.color !== undefined;
        const { conditions } = setCondition((w.status as { conditions?: never[] } | undefined)?.conditions, {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason: ready ? 'Painted' : 'NoColor',
          message: ready ? `painted ${w.spec?.color}` : 'spec.color is not set',
          observedGeneration: w.metadata.generation ?? 0,
        });
        await updateStatusIfChanged(ctx.rawClient, Widgets, w, { ...w.status, conditions } as NonNullable<
          Widget['status']
        >);
        return done();
      });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await waitFor('readyz', async () => (await get(mgr.healthAddress, '/readyz')).status === 200);
      assert.equal((await get(mgr.healthAddress, '/healthz')).text, 'ok');
      const before = parseMetrics((await get(mgr.metricsAddress, '/metrics')).text);
      await client.create(Widgets, { metadata: { name: 'w', namespace: 'mx' }, spec: { replicas: 1 } });
      type WithConditions = {
        conditions?: { type: string; status: string; lastTransitionTime: string; reason: string }[];
      };
      const status = async () =>
        (await client.get(Widgets, { namespace: 'mx', name: 'w' })).status as WithConditions | undefined;
      const first = await waitFor('Ready=False', async () =>
        getCondition((await status())?.conditions as never, 'Ready'),
      );
      assert.equal(first.status, 'False');
      const rv = (await client.get(Widgets, { namespace: 'mx', name: 'w' })).metadata.resourceVersion;
      // a label change reconciles again, but nothing in the status changes: no write
      await new Promise((r) => setTimeout(r, 300)); // let the reconcile caused by our own status write pass
      const seen = reconciles;
      const touched = (
        await client.patch(Widgets, { namespace: 'mx', name: 'w' }, { metadata: { labels: { touch: '1' } } })
      ).metadata.resourceVersion;
      await waitFor('another reconcile', async () => reconciles > seen);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(
        (await client.get(Widgets, { namespace: 'mx', name: 'w' })).metadata.resourceVersion,
        touched,
        'no status write without a change',
      );
      assert.notEqual(rv, touched);
      await client.patch(Widgets, { namespace: 'mx', name: 'w' }, { spec: { color: 'blue' } });
      const second = await waitFor('Ready=True', async () => {
        const c = getCondition((await status())?.conditions as never, 'Ready');
        return c?.status === 'True' ? c : undefined;
      });
      assert.equal(second.reason, 'Painted');
      const text = (await get(mgr.metricsAddress, '/metrics')).text;
      const m = parseMetrics(text);
      const delta = (name: string, match: Record<string, string>) => sumOf(m, name, match) - sumOf(before, name, match);
      assert.ok(delta('controller_runtime_reconcile_total', { controller: 'widget', result: 'success' }) >= 3);
      assert.ok(delta('workqueue_adds_total', { name: 'widget' }) >= 3);
      assert.ok(sumOf(m, 'controller_runtime_reconcile_time_seconds_count', { controller: 'widget' }) >= 3);
      assert.equal(sumOf(m, 'controller_runtime_max_concurrent_reconciles', { controller: 'widget' }), 1);
      assert.ok(
        sumOf(m, 'rest_client_requests_total', { code: '200', method: 'PATCH' }) >= 2,
        'status writes are counted',
      );
      assert.ok(sumOf(m, 'opkit_watch_events_total', { resource: 'widgets.test.opkit.dev' }) >= 3);
      // the cached Widget's size as JSON (one object: the estimate is exact), once the cache holds its last write
      await waitFor("opkit_cache_bytes to be the cached Widget's JSON size", async () => {
        const now = parseMetrics((await get(mgr.metricsAddress, '/metrics')).text);
        const cached = mgr.cache.informer(Widgets).store.list();
        const bytes = cached.reduce((n, w) => n + Buffer.byteLength(JSON.stringify(w)), 0);
        const widgets = { resource: 'widgets.test.opkit.dev' };
        return sumOf(now, 'opkit_cache_objects', widgets) === 1 && sumOf(now, 'opkit_cache_bytes', widgets) === bytes;
      });
      for (const name of [
        'workqueue_depth',
        'workqueue_queue_duration_seconds_count',
        'workqueue_work_duration_seconds_count',
        'workqueue_retries_total',
        'workqueue_unfinished_work_seconds',
        'workqueue_longest_running_processor_seconds',
        'controller_runtime_active_workers',
        'controller_runtime_reconcile_errors_total',
        'opkit_watch_seconds_since_last_event',
        'opkit_watch_relists_total',
        'process_cpu_seconds_total',
        'nodejs_heap_size_used_bytes',
      ]) {
        assert.ok(
          [...m.keys()].some((k) => k === name || k.startsWith(`${name}{`)),
          `${name} is exported`,
        );
      }
    } finally {
      stop.abort();
      await running;
    }
    await assert.rejects(get(mgr.metricsAddress, '/metrics'), 'servers close on stop');
  });

  test('/readyz fails until the caches have synced, then passes', async () => {
    const proxy = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'freeze' } });
    const via = await clientVia(env, proxy.url);
    const mgr = await manager('ready-op', 'rz', via);
    mgr
      .controller()
      .for(ConfigMaps)
      .complete(async () => done());
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await waitFor('the health server', async () => mgr.healthAddress);
      await new Promise((r) => setTimeout(r, 500));
      const before = await get(mgr.healthAddress, '/readyz');
      assert.equal(before.status, 500);
      assert.match(before.text, /\[-\]informers failed/);
      assert.equal((await get(mgr.healthAddress, '/healthz')).status, 200, 'alive while not ready');
      proxy.setMode({ kind: 'pass' });
      await waitFor('/readyz to pass', async () => (await get(mgr.healthAddress, '/readyz')).status === 200, 20_000);
      assert.match((await get(mgr.healthAddress, '/readyz?verbose')).text, /\[\+\]informers ok/);
    } finally {
      stop.abort();
      await running;
      via.close();
      await proxy.close();
    }
  });

  test('events: events.k8s.io/v1 with the controller, action and related object; repeats count a series; floods are rate limited', async () => {
    const mgr = await manager('events-op', 'ev');
    const cm = await client.create(ConfigMaps, { metadata: { name: 'subject', namespace: 'ev' } });
    const other = await client.create(ConfigMaps, { metadata: { name: 'related', namespace: 'ev' } });
    const rec = mgr.eventRecorder('widget-controller');
    const related = objectReference(ConfigMaps, other);
    for (let i = 0; i < 5; i++) {
      rec.event(ConfigMaps, cm, 'Warning', 'CreateFailed', 'quota exceeded', { action: 'CreatePod', related });
    }
    rec.event(ConfigMaps, cm, 'Normal', 'Created', 'created 3 pods');
    await rec.flush();
    const events = (await client.list(EventsV1Events, { namespace: 'ev' })).items.filter(
      (e) => e.regarding?.uid === cm.metadata.uid,
    );
    assert.equal(events.length, 2, 'one Event per distinct note');
    const failed = events.find((e) => e.reason === 'CreateFailed');
    assert.equal(failed?.series?.count, 5);
    assert.match(String(failed?.series?.lastObservedTime), /\.\d{6}Z$/, 'a MicroTime');
    assert.equal(failed?.type, 'Warning');
    const { EventRecorder } = await import('../src/helpers/index.ts');
    const limited = new EventRecorder({ client, component: 'flood', log: recordingLogger(), burst: 3 });
    for (let i = 0; i < 10; i++) limited.event(ConfigMaps, cm, 'Warning', `Flood${i}`, `message ${i}`);
    await limited.flush();
    assert.equal(limited.dropped, 7);
    const flood = (await client.list(EventsV1Events, { namespace: 'ev' })).items.filter(
      (e) => e.reportingController === 'flood',
    );
    assert.equal(flood.length, 3);
  });

  test('events: 100 repeats end as series.count 100; repeats over the rate limit are written once it allows', async () => {
    const cm = await client.create(ConfigMaps, { metadata: { name: 'repeated', namespace: 'ev' } });
    const { EventRecorder } = await import('../src/helpers/index.ts');
    const seriesOf = async (controller: string) =>
      (await client.list(EventsV1Events, { namespace: 'ev' })).items.filter(
        (e) => e.reportingController === controller && e.regarding?.uid === cm.metadata.uid,
      );
    const rec = new EventRecorder({ client, component: 'repeats', log: recordingLogger() });
    for (let i = 0; i < 100; i++) rec.event(ConfigMaps, cm, 'Warning', 'BackOff', `restart ${i}`);
    await rec.flush();
    assert.deepEqual(
      (await seriesOf('repeats')).map((e) => e.series?.count),
      [100],
      'one Event counting every repeat (the default burst is 25)',
    );
    // a burst of 2 writes, then one per 300 ms: the repeats past the burst are held back, then written in one patch
    const paced = new EventRecorder({ client, component: 'paced', log: recordingLogger(), burst: 2, refillMs: 300 });
    for (let i = 0; i < 10; i++) {
      paced.event(ConfigMaps, cm, 'Warning', 'BackOff', 'restarting');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await waitFor('the held-back repeats', async () => (await seriesOf('paced'))[0]?.series?.count === 10, 10_000, 50);
    assert.equal(paced.dropped, 0);
    assert.equal((await seriesOf('paced')).length, 1);
  });

  test('events: a flush with a deadline cancels writes stuck on a hung connection, and the recorder goes on', async () => {
    const cm = await client.create(ConfigMaps, { metadata: { name: 'stuck', namespace: 'ev' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const via = await clientVia(env, proxy.url);
    try {
      const { EventRecorder } = await import('../src/helpers/index.ts');
      const rec = new EventRecorder({ client: via, component: 'stuck', log: recordingLogger() });
      proxy.setMode({ kind: 'freeze' });
      rec.event(ConfigMaps, cm, 'Normal', 'Hung', 'written while the connection hangs');
      const t0 = performance.now();
      assert.equal(await rec.flush(300), 1, 'the hung write is cancelled');
      assert.ok(performance.now() - t0 < 2_000, `flush(300) took ${performance.now() - t0} ms`);
      proxy.setMode({ kind: 'pass' });
      rec.event(ConfigMaps, cm, 'Normal', 'Later', 'written once the connection is back');
      assert.equal(await rec.flush(10_000), 0);
      const reasons = (await client.list(EventsV1Events, { namespace: 'ev' })).items
        .filter((e) => e.reportingController === 'stuck')
        .map((e) => e.reason);
      assert.deepEqual(reasons, ['Later']);
    } finally {
      via.close();
      await proxy.close();
    }
  });

  test("the manager's client writes Strict by default, and logs each distinct warning of the apiserver once", async () => {
    const log = recordingLogger();
    const mgr = await Manager.create({ name: 'strict-op', kubeconfig: { path: env.kubeconfigPath }, log });
    try {
      const typo = (name: string) => ({ metadata: { name, namespace: 'mx' }, spec: { replcas: 2 } }) as never;
      await assert.rejects(mgr.client.create(Widgets, typo('strict')), (e) => {
        assert.ok(isApiError(e, 'BadRequest'));
        assert.match(e.message, /unknown field "spec\.replcas"/);
        return true;
      });
      await mgr.client.create(Widgets, typo('warned-1'), { fieldValidation: 'Warn' });
      await mgr.client.create(Widgets, typo('warned-2'), { fieldValidation: 'Warn' });
      const warned = log.entries.filter((e) => e.level === 'warn' && /the apiserver warns/.test(e.message));
      assert.deepEqual(
        warned.map((e) => [e.message, e.fields.component, e.fields.request]),
        [
          [
            'the apiserver warns: unknown field "spec.replcas"',
            'client',
            'POST /apis/test.opkit.dev/v1/namespaces/mx/widgets',
          ],
        ],
      );
    } finally {
      mgr.client.close();
    }
  });

  test('reconcile timeout: a reconcile hung on the network is cut at the deadline, counted, logged and retried', async () => {
    await client.create(Namespaces, { metadata: { name: 'rt' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const via = await clientVia(env, proxy.url);
    const log = recordingLogger();
    const mgr = await Manager.create({
      name: 'timeout-op',
      client: via,
      log,
      metrics: { bindAddress: '127.0.0.1:0', secure: false },
      health: { bindAddress: '127.0.0.1:0' },
      cache: { namespace: 'rt' },
      controllers: { reconcileTimeoutMs: 1_500 },
    });
    const started: number[] = [];
    mgr
      .controller()
      .for(Widgets, generationChanged) // its own status writes start no reconcile
      .complete(async (req, ctx) => {
        started.push(performance.now());
        // the first reconcile's request hangs (the connection is frozen); the retry finds it back
        proxy.setMode({ kind: started.length === 1 ? 'freeze' : 'pass' });
        const w = await ctx.rawClient.get(Widgets, req);
        await ctx.rawClient.updateStatus(Widgets, { ...w, status: { phase: `reconciled ${started.length}` } });
        return done();
      });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await client.create(Widgets, { metadata: { name: 'slow', namespace: 'rt' }, spec: { replicas: 1 } });
      // without the timeout the hung request would wait for the client's own deadline (60 s)
      const phase = await waitFor(
        'the retry to write the status',
        async () => (await client.get(Widgets, { namespace: 'rt', name: 'slow' })).status?.phase,
        15_000,
      );
      assert.equal(phase, 'reconciled 2');
      const cut = (started[1] as number) - (started[0] as number);
      assert.ok(cut >= 1_400 && cut < 5_000, `the retry came ${cut} ms after the hung reconcile began`);
      const metrics = parseMetrics((await get(mgr.metricsAddress, '/metrics')).text);
      assert.equal(sumOf(metrics, 'controller_runtime_reconcile_timeouts_total', { controller: 'widget' }), 1);
      assert.ok(
        log.entries.some(
          (e) => e.level === 'warn' && /ran past its timeout/.test(e.message) && e.fields.timeoutMs === 1_500,
        ),
        'the timeout is logged with its limit',
      );
    } finally {
      proxy.setMode({ kind: 'pass' });
      stop.abort();
      await running;
      via.close();
      await proxy.close();
    }
  });

  test('finalizers: added before acting, cleanup on delete (background and foreground), then removed', async () => {
    const mgr = await manager('fin-op', 'fin');
    const cleaned: string[] = [];
    const NAME = 'test.opkit.dev/cleanup';
    mgr
      .controller()
      .for(ConfigMaps)
      .complete(async (req, ctx) => {
        const cm = await ctx.cache.get(ConfigMaps, req);
        if (!cm?.metadata.labels?.managed) return done();
        return finalizer(
          ctx.rawClient,
          ConfigMaps,
          cm,
          NAME,
          {
            apply: async () => done(),
            cleanup: async (obj: ConfigMap) => {
              cleaned.push(obj.metadata.name as string);
              return done();
            },
          },
          { signal: ctx.signal },
        );
      });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      for (const name of ['bg', 'fg'])
        await client.create(ConfigMaps, { metadata: { name, namespace: 'fin', labels: { managed: 'yes' } } });
      for (const name of ['bg', 'fg']) {
        await waitFor(`finalizer on ${name}`, async () =>
          (await client.get(ConfigMaps, { namespace: 'fin', name })).metadata.finalizers?.includes(NAME),
        );
      }
      const fg = await client.get(ConfigMaps, { namespace: 'fin', name: 'fg' });
      await client.create(ConfigMaps, {
        metadata: {
          name: 'fg-child',
          namespace: 'fin',
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              name: 'fg',
              uid: fg.metadata.uid as string,
              blockOwnerDeletion: true,
            },
          ],
        },
      });
      await client.delete(ConfigMaps, { namespace: 'fin', name: 'bg' });
      await client.delete(ConfigMaps, { namespace: 'fin', name: 'fg' }, { propagationPolicy: 'Foreground' });
      const gone = async (name: string) =>
        isApiError(await client.get(ConfigMaps, { namespace: 'fin', name }).catch((e: unknown) => e), 'NotFound');
      await waitFor('both deleted', async () => (await gone('bg')) && (await gone('fg')) && (await gone('fg-child')));
      assert.deepEqual(cleaned.sort(), ['bg', 'fg'], 'cleanup ran once per object');
    } finally {
      stop.abort();
      await running;
    }
  });

  test('a graceful stop: readiness fails at once, and the webhook (failurePolicy Fail) answers until the controllers drained', async () => {
    const namespace = 'gs';
    await client.create(Namespaces, { metadata: { name: namespace } });
    // the apiserver calls the manager's webhook for widgets in this namespace only, and refuses the write without it
    const hooks = await env.installWebhooks({
      configurations: [
        {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'ValidatingWebhookConfiguration',
          metadata: { name: 'graceful-stop-widgets' },
          webhooks: [
            {
              name: 'vwidget.graceful-stop.opkit.dev',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              timeoutSeconds: 5,
              clientConfig: { service: { name: 'unused', namespace, path: '/validate-widget' } },
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
              rules: [
                { apiGroups: ['test.opkit.dev'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['widgets'] },
              ],
            },
          ],
        },
      ],
    });
    const mgr = await Manager.create({
      name: 'graceful-op',
      client,
      log: recordingLogger(),
      metrics: { bindAddress: '0' },
      health: { bindAddress: '127.0.0.1:0' },
      cache: { namespace },
      controllers: { gracefulShutdownTimeoutMs: 4_000 },
      webhook: { bindAddress: `127.0.0.1:${hooks.port}`, certDir: hooks.certDir },
    });
    let reconciling: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      reconciling = resolve;
    });
    let drained = false;
    mgr
      .controller()
      .for(Widgets)
      .complete(async (req) => {
        if (req.name !== 'slow') return done();
        reconciling();
        await new Promise((r) => setTimeout(r, 2_500)); // slow to drain, within the 4 s drain time
        drained = true;
        return done();
      });
    mgr.webhookServer.admission(
      '/validate-widget',
      validator(Widgets, {
        create: (w: Widget) => ({
          errors: w.spec?.color === 'red' ? [fieldErrors.forbidden('spec.color', 'no red widgets')] : [],
        }),
      }),
    );
    const widget = (name: string, color: string) => ({ metadata: { name, namespace }, spec: { color } });
    const stop = new AbortController();
    const running = mgr.start(stop.signal);
    try {
      await waitFor('/readyz to pass', async () => (await get(mgr.healthAddress, '/readyz')).status === 200, 20_000);
      await client.create(Widgets, widget('slow', 'blue'));
      await inFlight;
      stop.abort();
      const ready = await get(mgr.healthAddress, '/readyz');
      assert.equal(ready.status, 500, 'not ready from the moment the stop begins');
      assert.match(ready.text, /\[-\]shutdown failed/);
      assert.equal((await get(mgr.healthAddress, '/healthz')).status, 200, 'alive while draining');
      // writes that need the webhook, all while the reconcile drains: each must be judged by it
      let written = 0;
      for (let i = 0; !drained; i++) {
        await client.create(Widgets, widget(`during-${i}`, 'blue'));
        written += 1;
        if (i === 3)
          await assert.rejects(client.create(Widgets, widget('red', 'red')), /spec\.color: Forbidden: no red widgets/);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(written >= 10, `${written} writes during the drain`);
      assert.equal((await get(mgr.healthAddress, '/readyz')).status, 500, 'still not ready at the end of the drain');
      await running;
      await assert.rejects(client.create(Widgets, widget('after', 'blue')), /failed calling webhook/);
    } finally {
      stop.abort();
      await running;
      await hooks.uninstall();
    }
  });

  test('a missing CRD stops the manager at once with a clear error', async () => {
    const mgr = await manager('missing-op', 'mi');
    const Gadgets = resource({
      group: 'nowhere.opkit.dev',
      version: 'v1',
      kind: 'Gadget',
      plural: 'gadgets',
      namespaced: true,
    });
    mgr
      .controller()
      .for(Gadgets)
      .complete(async () => done());
    const t0 = Date.now();
    await assert.rejects(mgr.start(new AbortController().signal), (e) => {
      assert.ok(e instanceof ManagerError);
      assert.equal(e.code, 'ResourceNotServed');
      assert.match(e.message, /gadgets\.nowhere\.opkit\.dev.*install its CustomResourceDefinition/);
      return true;
    });
    assert.ok(Date.now() - t0 < 5_000);
  });
});
