/**
 * Sharding with the apiserver's shard selectors (KEP-5866), on a control plane with the `ShardedListAndWatch` gate on:
 * two managers share a Widget controller (each Widget owns a ConfigMap) with the default filter, `auto`. They must
 * pick `server`: no Widget is labelled, each replica caches only the Widgets whose uid hashes into its shards (the
 * apiserver filters them), children carry their owner's `u<shard>` label, and no Widget is reconciled by two replicas
 * at once. A third replica with the `labels` filter then joins: the `server` replicas hand every shard over to it
 * (never two filters at once), and when it leaves they take them back and relabel the children it made; no child is
 * ever made twice (half of them are made with generateName), however the filters switch.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Environment, start } from '@opkit/testenv';
import { ConfigMaps, Namespaces } from '../src/client/builtins.ts';
import { Client, loadConfig } from '../src/client/index.ts';
import { Manager } from '../src/index.ts';
import { SHARD_COUNT, SHARD_LABEL } from '../src/sharding/ring.ts';
import { uidShard } from '../src/sharding/scheme.ts';
import { overlaps, reconcileWidget, replicaLog, type Span, TIMINGS } from './sharding-support.ts';
import { installWidgetCrd, Widgets, waitFor } from './support.ts';

const NS = 'shard-server';
const WIDGETS = 20;

describe('sharding by the apiserver’s shard selectors', () => {
  let env: Environment;
  let client: Client;
  const spans: Span[] = [];
  const replicas = new Map<string, { mgr: Manager; stop: AbortController; run: Promise<void> }>();

  async function replica(name: string, filter: 'auto' | 'labels'): Promise<void> {
    const config = await loadConfig({ path: env.kubeconfigPath });
    const mgr = new Manager({
      name: 'shard-server-test',
      client: new Client(config, { name: `replica-${name}` }),
      log: replicaLog(name, (level) => level !== 'debug'),
      metrics: { bindAddress: '0' },
      health: { bindAddress: '0' },
      sharding: { enabled: true, namespace: NS, identity: name, filter, ...TIMINGS },
      controllers: { gracefulShutdownTimeoutMs: 1_000 },
    });
    mgr
      .controller(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        // odd Widgets make their child with generateName: a child they cannot see, they would make again
        const generate = Number(w.metadata.name?.slice(2)) % 2 === 1;
        const before = () => new Promise<void>((r) => setTimeout(r, 20));
        await reconcileWidget(spans, name, w, ctx, { generate, before });
      });
    const stop = new AbortController();
    replicas.set(name, { mgr, stop, run: mgr.start(stop.signal) });
  }

  async function leave(name: string): Promise<void> {
    const r = replicas.get(name);
    r?.stop.abort();
    await r?.run;
    replicas.delete(name);
  }

  const held = (name: string) => replicas.get(name)?.mgr.shards ?? [];

  /** Every Widget of `color` has one child of that color, labelled with `value(owner)`. */
  async function converged(color: string, value: (uid: string) => string): Promise<boolean> {
    const widgets = (await client.list(Widgets, { namespace: NS })).items;
    const children = (await client.list(ConfigMaps, { namespace: NS })).items;
    return (
      widgets.length === WIDGETS &&
      widgets.every((w) => {
        const mine = children.filter((c) => c.metadata.ownerReferences?.[0]?.uid === w.metadata.uid);
        return (
          mine.length === 1 &&
          mine[0]?.data?.color === color &&
          mine[0]?.metadata.labels?.[SHARD_LABEL] === value(w.metadata.uid ?? '')
        );
      })
    );
  }
  const server = (uid: string) => `u${uidShard(uid)}`;

  before(async () => {
    env = await start({ nodes: 0, apiserverArgs: ['--feature-gates=ShardedListAndWatch=true'], log: () => {} });
    client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'shard-server-test' });
    await installWidgetCrd(client);
    await client.create(Namespaces, { metadata: { name: NS } });
  });

  after(async () => {
    for (const name of [...replicas.keys()]) await leave(name);
    await env?.stop();
  });

  test('auto picks the shard selectors: no Widget is labelled, each replica caches only its shards', async () => {
    await replica('a', 'auto');
    await replica('b', 'auto');
    for (let i = 0; i < WIDGETS; i++)
      await client.create(Widgets, { metadata: { name: `w-${i}`, namespace: NS }, spec: { color: 'red' } });
    await waitFor(
      'a and b to hold every shard',
      async () => held('a').length + held('b').length === SHARD_COUNT && held('a').length > 0,
    );
    await waitFor('red Widgets', () => converged('red', server), 60_000);

    const widgets = (await client.list(Widgets, { namespace: NS })).items;
    assert.deepEqual(
      widgets.filter((w) => w.metadata.labels?.[SHARD_LABEL] !== undefined).map((w) => w.metadata.name),
      [],
      'no Widget carries a shard label: nothing was written to label one',
    );
    for (const name of ['a', 'b']) {
      const mine = new Set(held(name));
      const mgr = replicas.get(name)?.mgr;
      const cached = (await mgr?.cache.list(Widgets)) ?? [];
      assert.ok(cached.length > 0 && cached.length < WIDGETS, `${name} caches some Widgets, not all`);
      assert.ok(
        cached.every((w) => mine.has(uidShard(w.metadata.uid ?? ''))),
        `${name} caches only the Widgets of its shards`,
      );
      const children = (await mgr?.cache.list(ConfigMaps)) ?? [];
      assert.ok(children.every((c) => mine.has(Number(c.metadata.labels?.[SHARD_LABEL]?.slice(1)))));
    }
    assert.deepEqual(overlaps(spans), []);
  });

  test('a labels replica joins: the server replicas hand every shard to it; when it leaves they take them back', async () => {
    await replica('c', 'labels');
    await waitFor(
      'c to hold every shard',
      async () => held('c').length === SHARD_COUNT && held('a').length + held('b').length === 0,
    );
    for (let i = 0; i < WIDGETS; i++)
      await client.patch(Widgets, { namespace: NS, name: `w-${i}` }, { spec: { color: 'blue' } });
    const labelled = async () => {
      const widgets = (await client.list(Widgets, { namespace: NS })).items;
      const byUid = new Map(widgets.map((w) => [w.metadata.uid ?? '', w.metadata.labels?.[SHARD_LABEL] ?? '']));
      return converged('blue', (uid) => byUid.get(uid) ?? '');
    };
    // the labels replica labels every Widget, and its children carry the owner's label: its own scheme
    await waitFor('blue Widgets, labelled', labelled, 60_000);

    await leave('c');
    await waitFor('a and b to hold every shard again', async () => held('a').length + held('b').length === SHARD_COUNT);
    for (let i = 0; i < WIDGETS; i++)
      await client.patch(Widgets, { namespace: NS, name: `w-${i}` }, { spec: { color: 'green' } });
    await waitFor('green Widgets', () => converged('green', server), 60_000);
    assert.deepEqual(overlaps(spans), []);
  });
});
