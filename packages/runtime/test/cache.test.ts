/**
 * The cache against a real apiserver: caches of a list of namespaces (one watch each, merged behind the same API),
 * and streaming lists (WatchList) — with no LIST request where the server streams, and a paginated list where it
 * refuses (the WatchList feature gate off).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Environment, readAuditLog, start, waitFor } from '@opkit/testenv';
import { Cache, CacheError, Informer } from '../src/cache/index.ts';
import { type ConfigMap, ConfigMaps, Namespaces } from '../src/client/builtins.ts';
import { Client, loadConfig, metadataOnly } from '../src/client/index.ts';
import { UsageError } from '../src/errors.ts';
import { silentLogger } from '../src/manager/index.ts';

async function seed(client: Client, namespaces: readonly string[], perNamespace: number): Promise<void> {
  for (const ns of namespaces) {
    await client.create(Namespaces, { metadata: { name: ns } });
    await Promise.all(
      Array.from({ length: perNamespace }, (_, i) =>
        client.create(ConfigMaps, { metadata: { name: `cm-${i}`, namespace: ns }, data: { i: String(i) } }),
      ),
    );
  }
}

/** LIST and WATCH requests of ConfigMaps made by the client named `name`, from the audit log. */
async function requests(env: Environment, name: string): Promise<{ lists: number; watches: number }> {
  const { events } = await readAuditLog(env.auditLogPath as string, {});
  const mine = events.filter((e) => e.userAgent?.includes(`(${name})`) && e.objectRef?.resource === 'configmaps');
  return {
    lists: mine.filter((e) => e.verb === 'list').length,
    watches: mine.filter((e) => e.verb === 'watch').length,
  };
}

describe('cache against a real apiserver', () => {
  let env: Environment;
  let admin: Client;
  const stop = new AbortController();
  before(async () => {
    env = await start({ nodes: 1, auditLog: true, log: () => {} });
    admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-admin' });
    await seed(admin, ['ns-a', 'ns-b', 'ns-c'], 20);
  });
  after(async () => {
    stop.abort();
    admin?.close();
    await env?.stop();
  });

  test('a cache of namespaces [a, b] holds exactly their objects, follows their changes, and refuses reads of c', async () => {
    const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-multi' });
    const cache = new Cache({ client, namespaces: ['ns-a', 'ns-b'] });
    const inf = cache.informer(ConfigMaps);
    const seen: string[] = [];
    inf.addEventHandler({
      add: (o) => seen.push(`add ${o.metadata.namespace}/${o.metadata.name}`),
      delete: (o) => seen.push(`delete ${o.metadata.namespace}/${o.metadata.name}`),
    });
    cache.start(stop.signal);
    const all = await cache.list(ConfigMaps);
    const namespaces = new Set(all.map((o) => o.metadata.namespace));
    assert.deepEqual([...namespaces].sort(), ['ns-a', 'ns-b']);
    // each namespace has its 20 ConfigMaps and the kube-root-ca.crt the controller-manager may have added
    assert.ok(all.filter((o) => o.metadata.name?.startsWith('cm-')).length === 40, `${all.length} cached`);
    assert.equal(
      (await cache.list(ConfigMaps, { namespace: 'ns-b' })).filter((o) => o.metadata.name?.startsWith('cm-')).length,
      20,
    );
    assert.equal((await cache.get(ConfigMaps, { namespace: 'ns-a', name: 'cm-3' }))?.data?.i, '3');
    await assert.rejects(
      cache.get(ConfigMaps, { namespace: 'ns-c', name: 'cm-3' }),
      (err: unknown) => err instanceof CacheError && err.code === 'NamespaceNotCached' && /ns-c/.test(err.message),
    );
    await assert.rejects(cache.list(ConfigMaps, { namespace: 'ns-c' }), CacheError);

    await admin.create(ConfigMaps, { metadata: { name: 'late', namespace: 'ns-b' } });
    await admin.create(ConfigMaps, { metadata: { name: 'late', namespace: 'ns-c' } });
    await admin.delete(ConfigMaps, { namespace: 'ns-a', name: 'cm-0' });
    await waitFor(
      'the change in ns-b and the delete in ns-a',
      async () => seen.includes('add ns-b/late') && seen.includes('delete ns-a/cm-0'),
    );
    assert.equal(inf.store.get('ns-c/late'), undefined, 'nothing from ns-c');
    assert.ok(!seen.some((s) => s.includes('ns-c/')));
    client.close();
  });

  test('an informer streams its initial list (no LIST request) and then follows changes on the same watch', async () => {
    const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-stream' });
    const inf = new Informer<ConfigMap>(client, ConfigMaps, { namespace: 'ns-c', log: silentLogger });
    // adds say whether they came with the initial list (a controller queues those behind fresh changes)
    const adds = new Map<string, boolean>();
    inf.addEventHandler({ add: (o, initial) => adds.set(o.metadata.name as string, initial) });
    inf.start(stop.signal);
    assert.equal(await inf.waitForSync(stop.signal), true);
    assert.equal([...inf.store.values()].filter((o) => o.metadata.name?.startsWith('cm-')).length, 20);
    await admin.create(ConfigMaps, { metadata: { name: 'after-sync', namespace: 'ns-c' } });
    await waitFor('the change after sync', async () => inf.store.get('ns-c/after-sync'));
    assert.equal(adds.get('cm-7'), true, 'from the initial list');
    assert.equal(adds.get('after-sync'), false, 'a change');
    let replayed: boolean | undefined;
    inf.addEventHandler({
      add: (o, initial) => {
        if (o.metadata.name === 'cm-7') replayed = initial;
      },
    });
    assert.equal(replayed, true, 'the replay to a handler added later counts as initial');
    await waitFor(
      'the audit log',
      async () => (await requests(env, 'cache-tests-stream')).watches >= 1 || undefined,
      10_000,
    ).catch(() => {});
    assert.equal((await requests(env, 'cache-tests-stream')).lists, 0, 'no LIST: the state came as a stream');
    client.close();
  });

  test('a metadata-only informer beside the full one: no data in memory, labels followed, writes that would drop data refused', async () => {
    const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-metadata' });
    await admin.create(Namespaces, { metadata: { name: 'ns-meta' } });
    // big values in many network chunks, with multibyte characters: what a metadata-only cache never receives
    const big = 'ünïcødé — 日本語 — 🚀 '.repeat(20_000);
    for (let i = 0; i < 5; i++) {
      await admin.create(ConfigMaps, {
        metadata: { name: `big-${i}`, namespace: 'ns-meta', labels: { tier: 'a', note: 'x' } },
        data: { blob: big },
      });
    }
    const cache = new Cache({ client, namespace: 'ns-meta' });
    const meta = cache.informer(metadataOnly(ConfigMaps));
    const full = cache.informer(ConfigMaps);
    assert.notEqual(meta as unknown, full as unknown, 'two informers: the metadata one and the full one');
    cache.start(stop.signal);
    // (the namespace's kube-root-ca.crt aside)
    const items = (await cache.list(metadataOnly(ConfigMaps))).filter((o) => o.metadata.name?.startsWith('big-'));
    assert.deepEqual(items.map((o) => o.metadata.name).sort(), ['big-0', 'big-1', 'big-2', 'big-3', 'big-4']);
    for (const o of items) {
      assert.equal(o.kind, 'PartialObjectMetadata');
      assert.equal('data' in o, false, 'no data in the metadata-only cache');
      assert.equal(o.metadata.labels?.tier, 'a');
    }
    const whole = await cache.get(ConfigMaps, { namespace: 'ns-meta', name: 'big-0' });
    assert.equal(whole?.data?.blob, big, 'the full informer holds the data, decoded whole');

    // a label change reaches the metadata-only informer through its watch
    await admin.patch(ConfigMaps, { namespace: 'ns-meta', name: 'big-1' }, { metadata: { labels: { tier: 'b' } } });
    await waitFor('the label change', async () =>
      meta.store.get('ns-meta/big-1')?.metadata.labels?.tier === 'b' ? true : undefined,
    );
    const byLabel = await cache.list(metadataOnly(ConfigMaps), { labelSelector: 'tier=b' });
    assert.deepEqual(
      byLabel.map((o) => o.metadata.name),
      ['big-1'],
    );

    // an empty metadata-only list (the apiserver sends `"items": null`) is an empty list
    const none = await client.list(metadataOnly(ConfigMaps), { namespace: 'ns-meta', labelSelector: 'tier=none' });
    assert.deepEqual(none.items, []);

    // the client: a metadata-only get and patch answer metadata; the data stays on the server
    const got = await client.get(metadataOnly(ConfigMaps), { namespace: 'ns-meta', name: 'big-2' });
    assert.equal(got.kind, 'PartialObjectMetadata');
    assert.equal('data' in got, false);
    const patched = await client.patch(
      metadataOnly(ConfigMaps),
      { namespace: 'ns-meta', name: 'big-2' },
      { metadata: { annotations: { 'example.com/seen': 'yes' } } },
    );
    assert.equal(patched.metadata.annotations?.['example.com/seen'], 'yes');
    assert.equal('data' in patched, false);
    assert.equal((await admin.get(ConfigMaps, { namespace: 'ns-meta', name: 'big-2' })).data?.blob, big);
    // an update through the metadata form would write the object without its data: refused before any request
    assert.throws(
      () => client.update(metadataOnly(ConfigMaps), got),
      (err: unknown) =>
        err instanceof UsageError && /ConfigMap \(metadata only\): update needs the whole object/.test(err.message),
    );
    assert.throws(
      () => client.create(metadataOnly(ConfigMaps), { metadata: { name: 'new', namespace: 'ns-meta' } }),
      UsageError,
    );
    await client.delete(metadataOnly(ConfigMaps), { namespace: 'ns-meta', name: 'big-4' });
    await waitFor('the delete', async () => (meta.store.get('ns-meta/big-4') ? undefined : true));
    client.close();
  });
});

describe('cache against an apiserver with WatchList off', () => {
  let env: Environment;
  const stop = new AbortController();
  before(async () => {
    env = await start({ nodes: 1, auditLog: true, apiserverArgs: ['--feature-gates=WatchList=false'], log: () => {} });
  });
  after(async () => {
    stop.abort();
    await env?.stop();
  });

  test('the informer falls back to a paginated list and syncs, in full and metadata-only', async () => {
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-admin' });
    await seed(admin, ['ns-d'], 30);
    const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'cache-tests-fallback' });
    const cache = new Cache({ client, namespace: 'ns-d', pageSize: 10 });
    cache.start(stop.signal);
    const items = await cache.list(ConfigMaps);
    assert.equal(items.filter((o) => o.metadata.name?.startsWith('cm-')).length, 30);
    await admin.create(ConfigMaps, { metadata: { name: 'after-sync', namespace: 'ns-d' } });
    await waitFor('the change after sync', async () => cache.informer(ConfigMaps).store.get('ns-d/after-sync'));
    assert.ok((await requests(env, 'cache-tests-fallback')).lists >= 3, 'paginated LIST requests');
    // the metadata-only form pages too, as PartialObjectMetadataList pages
    const meta = (await cache.list(metadataOnly(ConfigMaps))).filter((o) => o.metadata.name?.startsWith('cm-'));
    assert.equal(meta.length, 30);
    assert.ok(meta.every((o) => o.kind === 'PartialObjectMetadata' && !('data' in o)));
    client.close();
    admin.close();
  });
});
