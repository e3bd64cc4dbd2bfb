/**
 * Stale-cache detection against a real apiserver. An idle informer whose watches are healthy is never found stale
 * while the rest of the cluster changes (its bookmarks carry the apiserver's resourceVersion). Behind an HTTPS proxy
 * that holds every watch's events (an intermediary, or a stuck watch cache: the watches stay open or end, and bring
 * nothing), the cache is found stale, counted, logged and flagged for readiness, and relisted in pages; a cache with
 * the probe off, through the same proxy, still lacks the change when the hold ends (the figure: how long each lacked
 * it).
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { ApiFaultProxy } from '@opkit/testenv/chaos';
import { Cache } from '../src/cache/index.ts';
import { ClusterRoleBindings, ConfigMaps, Namespaces, ServiceAccounts } from '../src/client/builtins.ts';
import { Client, loadConfig } from '../src/client/index.ts';
import { Metrics } from '../src/metrics.ts';
import { parseMetrics } from './metrics-parse.ts';
import { type LogEntry, recordingLogger, Widgets, waitFor, widgetControlPlane } from './support.ts';

const NS = 'stale';
/** Short watches (bookmarks every few seconds) and a bound of two watch lifetimes, as the defaults are (45 s, 90 s). */
const FAST = { watchTimeoutSeconds: [3, 4] as const, staleness: { intervalMs: 500, afterMs: 8_000 } };
const STALE = 'the cache stopped advancing while the apiserver moved on: relisted in pages';

describe('stale-cache detection', () => {
  const plane = widgetControlPlane();
  let client: Client;
  before(async () => {
    ({ client } = plane);
    await client.create(ServiceAccounts, { metadata: { namespace: 'default', name: 'stale-probe' } });
    await client.create(ClusterRoleBindings, {
      metadata: { name: 'stale-probe' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'stale-probe', namespace: 'default' }],
    });
    await client.create(Namespaces, { metadata: { name: NS } });
  });

  test('an idle informer with healthy watches is never found stale while the rest of the cluster changes', async () => {
    const entries: LogEntry[] = [];
    const metrics = new Metrics({ processMetrics: false });
    const cache = new Cache({ client, metrics, log: recordingLogger(entries), ...FAST });
    const stop = plane.stopper();
    cache.start(stop.signal);
    await cache.informer(Widgets).waitForSync();
    let n = 0;
    const churn = setInterval(() => {
      void client.create(ConfigMaps, { metadata: { namespace: 'default', name: `churn-${n++}` } }).catch(() => {});
    }, 100);
    try {
      await new Promise((r) => setTimeout(r, 20_000)); // 2.5 stale bounds, 40 probes
    } finally {
      clearInterval(churn);
      stop.abort();
    }
    assert.ok(n > 100, `the cluster changed (${n} creates)`);
    assert.deepEqual(
      entries.filter((e) => e.message === STALE),
      [],
    );
    assert.equal(
      parseMetrics(metrics.text()).get('opkit_watch_stale_total{resource="widgets.test.opkit.dev"}'),
      undefined,
    );
  });

  test('watches held by an intermediary: found stale, reported, relisted in pages; with the probe off it stays stale', async () => {
    const { token } = await plane.env.kubeconfigFor({ name: 'stale-probe', namespace: 'default' });
    let failLists = false;
    const proxy = await ApiFaultProxy.start({
      target: { url: plane.env.server, caPem: plane.env.caPem },
      // while `failLists`: the relist (pages of 500) fails; the probe (a page of one) passes
      answer: (info) =>
        failLists && info.verb === 'list' && info.resource === 'widgets' && info.limit !== 1
          ? { code: 500 }
          : undefined,
    });
    const base = await loadConfig({ path: plane.env.kubeconfigPath });
    const auth = { credentials: async () => ({ headers: { authorization: `Bearer ${token}` } }), invalidate() {} };
    const viaProxy = (name: string) => new Client({ ...base, server: proxy.url, ca: proxy.caPem, auth }, { name });
    const probed = viaProxy('probed');
    const unprobed = viaProxy('unprobed');
    const entries: LogEntry[] = [];
    const metrics = new Metrics({ processMetrics: false });
    const cache = new Cache({ client: probed, metrics, log: recordingLogger(entries), namespace: NS, ...FAST });
    const control = new Cache({ client: unprobed, namespace: NS, ...FAST, staleness: false });
    const stop = plane.stopper();
    cache.start(stop.signal);
    control.start(stop.signal);
    const informer = cache.informer(Widgets);
    const controlInformer = control.informer(Widgets);
    try {
      await Promise.all([informer.waitForSync(), controlInformer.waitForSync()]);
      await client.create(Widgets, { metadata: { namespace: NS, name: 'before' } });
      await waitFor('both caches see a change', async () =>
        [informer, controlInformer].every((i) => i.store.get(`${NS}/before`) !== undefined),
      );

      proxy.holdWatches((info) => info.resource === 'widgets');
      failLists = true; // an outage of lists too, at first: the suspect cache cannot relist
      const heldAt = performance.now();
      await client.create(Widgets, { metadata: { namespace: NS, name: 'held' } });
      await waitFor('a relist tried and refused', async () => (proxy.stats.answered['500'] ?? 0) > 0);
      const suspectAfter = (performance.now() - heldAt) / 1000;
      assert.equal(informer.store.get(`${NS}/held`), undefined);
      assert.equal(informer.stale, false, 'an outage is not staleness: nothing flagged while the relist fails');

      failLists = false;
      await waitFor('the relist stored the change', async () => informer.store.get(`${NS}/held`) !== undefined);
      const seenAfter = (performance.now() - heldAt) / 1000;
      await waitFor('flagged', async () => informer.stale);
      const logged = entries.find((e) => e.message === STALE);
      assert.ok(logged, 'a warn line says so');
      assert.equal(logged.level, 'warn');
      const { serverResourceVersion, cacheResourceVersion, changed } = logged.fields;
      assert.ok(Number(serverResourceVersion) > Number(cacheResourceVersion), JSON.stringify(logged.fields));
      assert.equal(changed, 1, 'the relist added the Widget the cache had missed');
      assert.ok(
        (parseMetrics(metrics.text()).get('opkit_watch_stale_total{resource="widgets.test.opkit.dev"}') ?? 0) >= 1,
      );

      // the probe off: the same proxy, the same hold — still without the change 25 s into it
      await new Promise((r) => setTimeout(r, Math.max(0, 25_000 - (performance.now() - heldAt))));
      assert.equal(controlInformer.store.get(`${NS}/held`), undefined, 'without the probe the cache stays stale');
      assert.equal(informer.stale, true, 'flagged while its watch brings nothing');
      console.log(
        `stale-cache figure: watches held; suspect and relisted after ${suspectAfter.toFixed(1)} s (lists refused), the change in the cache ${seenAfter.toFixed(1)} s after it was made (lists let through); without the probe, not after 25 s`,
      );
      proxy.releaseWatches();
      await waitFor(
        'the control sees it once released',
        async () => controlInformer.store.get(`${NS}/held`) !== undefined,
      );
      await waitFor('the flag cleared once its watch brings it forward', async () => !informer.stale);
    } finally {
      stop.abort();
      await Promise.all([informer.stopped(), controlInformer.stopped()]);
      probed.close();
      unprobed.close();
      await proxy.close();
    }
  });
});
