import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { Informer, type InformerOptions, keepFields } from '../src/cache/index.ts';
import { type ConfigMap, ConfigMaps, Namespaces } from '../src/client/builtins.ts';
import { type Client, keyOf } from '../src/client/index.ts';
import { silentLogger } from '../src/manager/index.ts';
import type { WatchMetrics } from '../src/metrics.ts';
import { clientVia, recordingLogger, startEnv, waitFor } from './support.ts';

/** Records every event an informer delivers. */
function recorder(inf: Informer<ConfigMap>) {
  const adds = new Map<string, number>();
  const updates: string[] = [];
  const deletes: string[] = [];
  inf.addEventHandler({
    add: (o) => adds.set(o.metadata.uid as string, (adds.get(o.metadata.uid as string) ?? 0) + 1),
    update: (_old, o) => updates.push(o.metadata.name as string),
    delete: (o) => deletes.push(o.metadata.name as string),
  });
  return { adds, updates, deletes };
}

function watchMetrics() {
  const restarts: string[] = [];
  let relists = 0;
  let onRestart: (reason: string) => void = () => {};
  const hooks: WatchMetrics = {
    restarted: (reason) => {
      restarts.push(reason);
      onRestart(reason);
    },
    relisted: () => {
      relists += 1;
    },
    event: () => {},
    failed: () => {},
  };
  return {
    hooks,
    restarts,
    get relists() {
      return relists;
    },
    onRestart(fn: (reason: string) => void) {
      onRestart = fn;
    },
  };
}

describe('informer against a real apiserver', () => {
  let env: Environment;
  let client: Client;
  const controllers: AbortController[] = [];
  before(async () => {
    ({ env, client } = await startEnv());
  });
  after(async () => {
    for (const c of controllers) c.abort();
    client?.close();
    await env?.stop();
  });

  async function namespace(name: string, objects: number): Promise<void> {
    await client.create(Namespaces, { metadata: { name } });
    await Promise.all(
      Array.from({ length: objects }, (_, i) =>
        client.create(ConfigMaps, {
          metadata: { name: `cm-${i}`, namespace: name, labels: { t: 'x' } },
          data: { i: String(i) },
        }),
      ),
    );
  }

  function informer(via: Client, ns: string, extra: Partial<InformerOptions<ConfigMap>> = {}): Informer<ConfigMap> {
    const inf = new Informer<ConfigMap>(via, ConfigMaps, {
      namespace: ns,
      labelSelector: 't=x',
      pageSize: 7,
      freeze: true,
      backoff: { initialMs: 200, maxMs: 2_000 },
      log: silentLogger,
      ...extra,
    });
    const ctl = new AbortController();
    controllers.push(ctl);
    inf.start(ctl.signal);
    return inf;
  }

  /** Waits until the informer's store equals a fresh LIST: same keys, same resourceVersions. */
  async function convergedWithList(inf: Informer<ConfigMap>, ns: string): Promise<void> {
    await waitFor(`the store of ${ns} to equal a fresh list`, async () => {
      const fresh = await client.list(ConfigMaps, { namespace: ns, labelSelector: 't=x' });
      const want = new Map(fresh.items.map((o) => [keyOf(o), o.metadata.resourceVersion]));
      const have = new Map(inf.store.list().map((o) => [keyOf(o), o.metadata.resourceVersion]));
      return want.size === have.size && [...want].every(([k, rv]) => have.get(k) === rv);
    });
  }

  test('syncs only after the whole paginated list is stored, then follows changes; objects are read-only', async () => {
    await namespace('s', 30);
    const inf = informer(client, 's');
    assert.equal(await inf.waitForSync(), true);
    assert.equal(inf.store.size, 30, 'synced means fully listed (5 pages of 7)');
    const seen = recorder(inf);
    assert.equal(seen.adds.size, 30, 'a late handler first gets an add per stored object');
    await client.create(ConfigMaps, { metadata: { name: 'late', namespace: 's', labels: { t: 'x' } } });
    await client.patch(ConfigMaps, { namespace: 's', name: 'cm-1' }, { data: { i: 'changed' } });
    await client.delete(ConfigMaps, { namespace: 's', name: 'cm-2' });
    await waitFor(
      'the three events',
      async () => seen.adds.size === 31 && seen.updates.includes('cm-1') && seen.deletes.includes('cm-2'),
    );
    const stored = inf.store.get('s/cm-1') as ConfigMap;
    assert.throws(() => {
      (stored.data as Record<string, string>).i = 'mutated';
    }, TypeError);
    assert.equal(inf.store.byIndex('namespace', 's').length, 30);
  });

  test('survives an apiserver restart with no missed and no duplicated events', async () => {
    await namespace('r', 20);
    const m = watchMetrics();
    const inf = informer(client, 'r', { metrics: m.hooks });
    await inf.waitForSync();
    const seen = recorder(inf);
    await env.restart('kube-apiserver', { downMs: 1_000 });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        client.create(ConfigMaps, { metadata: { name: `new-${i}`, namespace: 'r', labels: { t: 'x' } } }),
      ),
    );
    for (let i = 0; i < 5; i++)
      await client.patch(ConfigMaps, { namespace: 'r', name: `cm-${i}` }, { data: { i: 'u' } });
    for (let i = 5; i < 10; i++) await client.delete(ConfigMaps, { namespace: 'r', name: `cm-${i}` });
    await convergedWithList(inf, 'r');
    assert.equal(inf.store.size, 25);
    assert.equal(seen.adds.size, 30, '20 replayed + 10 new');
    assert.ok(
      [...seen.adds.values()].every((n) => n === 1),
      'no object was added twice',
    );
    assert.deepEqual(seen.deletes.sort(), ['cm-5', 'cm-6', 'cm-7', 'cm-8', 'cm-9']);
    for (let i = 0; i < 5; i++) assert.ok(seen.updates.includes(`cm-${i}`), `update of cm-${i} delivered`);
    assert.ok(m.restarts.length >= 1, 'the watch was restarted');
  });

  /**
   * The gap of an outage that spans a compaction and an apiserver restart. Paged lists: the resumed watch gets 410 and
   * the informer relists. Streaming lists: this apiserver (1.37) may resume the watch across the restart instead, so
   * only what the handlers see is asserted (the 410 path of the streaming mode is the same code, tested paged). With
   * a field mask (`keepFields`, decoded from protobuf), the 410 must still be read as a 410, not as a Status whose code
   * the mask dropped.
   */
  for (const [listMode, masked] of [
    ['paged', false],
    ['stream', false],
    ['paged', true],
  ] as const)
    test(`after compaction and a restart (${listMode} lists${masked ? ', keepFields' : ''}): reports deletes from the gap, no duplicate adds`, async () => {
      const ns = `g-${listMode}${masked ? '-masked' : ''}`;
      await namespace(ns, 10);
      const proxy = await FaultProxy.start({ target: targetOf(env.server) });
      const via = await clientVia(env, proxy.url);
      const m = watchMetrics();
      const inf = informer(via, ns, {
        metrics: m.hooks,
        listMode,
        ...(masked ? { transform: keepFields<ConfigMap>('data') } : {}),
      });
      try {
        await inf.waitForSync();
        const seen = recorder(inf);
        proxy.setMode({ kind: 'freeze' });
        for (const i of [0, 1, 2]) await client.delete(ConfigMaps, { namespace: ns, name: `cm-${i}` });
        await client.patch(ConfigMaps, { namespace: ns, name: 'cm-3' }, { data: { i: 'gap' } });
        for (const n of ['gap-a', 'gap-b'])
          await client.create(ConfigMaps, { metadata: { name: n, namespace: ns, labels: { t: 'x' } } });
        await env.compactEtcd();
        await env.restart('kube-apiserver'); // an empty watch cache: the informer's resourceVersion is now too old
        proxy.setMode({ kind: 'pass' });
        await convergedWithList(inf, ns);
        if (listMode === 'paged' || m.relists > 1) {
          assert.ok(m.restarts.includes('gone'), `a 410 was seen (restarts: ${m.restarts.join(', ')})`);
          assert.equal(m.relists, 2, 'the initial list and one relist');
        }
        assert.deepEqual(seen.deletes.sort(), ['cm-0', 'cm-1', 'cm-2'], 'deletes from the gap are reported');
        assert.deepEqual(seen.updates, ['cm-3']);
        assert.equal(seen.adds.size, 12, '10 replayed + 2 new');
        assert.ok(
          [...seen.adds.values()].every((n) => n === 1),
          'unchanged objects are not added again',
        );
      } finally {
        via.close();
        await proxy.close();
      }
    });

  /**
   * Two outages of a quiet namespace's informer, `healthyMs` apart: the retry attempt numbers (1 = the shortest
   * backoff) of the last failure of the first outage and the first failure of the second.
   */
  /**
   * An outage of three failed retries, then `healthyMs` of service counted from when the last retry was due (so a
   * slow machine does not shorten it), then a second outage (`second`): the attempt count of the last retry of the
   * first and of the first retry of the second.
   */
  async function twoOutages(
    ns: string,
    watchTimeoutSeconds: readonly [number, number],
    healthyMs: number,
    second: 'drop' | 'reset',
  ): Promise<{ grownTo: unknown; restartedAt: unknown }> {
    await namespace(ns, 1);
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const via = await clientVia(env, proxy.url);
    const log = recordingLogger();
    const failures = () => log.entries.filter((e) => /list\/watch failed/.test(e.message));
    const inf = informer(via, ns, { log, watchTimeoutSeconds });
    try {
      await inf.waitForSync();
      proxy.setMode({ kind: 'drop' });
      await waitFor('three failed retries', async () => failures().length >= 3, 15_000);
      proxy.setMode({ kind: 'pass' });
      for (;;) {
        const last = failures().at(-1);
        const due = (last?.at ?? 0) + Number(last?.fields.retryInMs ?? 0) + healthyMs;
        await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
        if (failures().at(-1) === last) break; // a retry failed still (sent before the pass): counted from the next
      }
      const before = failures().length;
      proxy.setMode({ kind: second });
      await waitFor('a failure in the second outage', async () => failures().length > before, 15_000);
      proxy.setMode({ kind: 'pass' });
      return { grownTo: failures()[before - 1]?.fields.attempt, restartedAt: failures()[before]?.fields.attempt };
    } finally {
      via.close();
      await proxy.close();
    }
  }

  test('the retry backoff starts over once the server answers well again, so the next outage gets short retries', async () => {
    // the watch the last retry opens delivers nothing and ends at its 1–2 s server timeout
    const { grownTo, restartedAt } = await twoOutages('b', [1, 2], 3_500, 'drop');
    assert.ok((grownTo as number) >= 3, 'the first outage had grown the backoff');
    assert.equal(restartedAt, 1, 'the second outage starts with the shortest retry');
  });

  test('a watch that stayed open for 5 s also starts the backoff over, however it ends', async () => {
    // the watch the last retry opens delivers nothing and would run for 60 s
    const { restartedAt } = await twoOutages('b2', [60, 61], 6_500, 'reset');
    assert.equal(restartedAt, 1, 'the second outage starts with the shortest retry');
  });

  test('a silently hung watch is detected by the inactivity deadline and recovers', async () => {
    await namespace('h', 1);
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const via = await clientVia(env, proxy.url);
    const m = watchMetrics();
    const log = recordingLogger();
    const inf = informer(via, 'h', { metrics: m.hooks, inactivityTimeoutMs: 2_000, log });
    try {
      await inf.waitForSync();
      // Let the hung connection be the only casualty: once the deadline fires, new connections pass again.
      m.onRestart((reason) => {
        if (reason === 'inactivity') proxy.setMode({ kind: 'pass' });
      });
      proxy.setMode({ kind: 'freeze' });
      const frozenAt = Date.now();
      await client.create(ConfigMaps, { metadata: { name: 'during-hang', namespace: 'h', labels: { t: 'x' } } });
      await waitFor('the change made during the hang', async () => inf.store.get('h/during-hang'), 15_000);
      const recovered = Date.now() - frozenAt;
      assert.ok(m.restarts.includes('inactivity'));
      assert.ok(recovered < 2_000 + 2_000 + 1_500, `recovered in ${recovered} ms (deadline 2 s + backoff)`);
      assert.ok(log.entries.some((e) => e.level === 'warn' && /silent/.test(e.message)));
      assert.ok(!log.entries.some((e) => e.level === 'error'), 'a recovered hang is not an error');
    } finally {
      via.close();
      await proxy.close();
    }
  });
});
