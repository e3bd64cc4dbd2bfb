/**
 * Sharding against a real control plane: three managers in one process, each through its own fault proxy, share a
 * Widget controller (each Widget owns a ConfigMap). Every reconcile is recorded with its replica, start and end, so
 * the test proves no Widget is reconciled by two replicas at once — through joins, a replica cut off from the
 * apiserver past its renew deadline, its return and a graceful stop — and that every replica caches only its
 * shards, that children carry their owner's shard, and that no child is ever made twice.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { ConfigMaps, Leases, Namespaces } from '../src/client/builtins.ts';
import type { Client } from '../src/client/index.ts';
import { Manager } from '../src/index.ts';
import { SHARD_COUNT, SHARD_LABEL } from '../src/sharding/ring.ts';
import { overlaps, reconcileWidget, replicaLog, type Span, TIMINGS } from './sharding-support.ts';
import { clientVia, installWidgetCrd, startEnv, Widgets, waitFor } from './support.ts';

const NS = 'shard';

describe('sharding between managers', () => {
  let env: Environment;
  let client: Client;
  const spans: Span[] = [];
  const replicas = new Map<string, { mgr: Manager; stop: AbortController; proxy: FaultProxy; run: Promise<void> }>();

  async function replica(name: string): Promise<void> {
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const mgr = new Manager({
      name: 'shard-test',
      client: await clientVia(env, proxy.url),
      log: replicaLog(name, (_level, msg) => msg.includes('sharding')),
      metrics: { bindAddress: '0' },
      health: { bindAddress: '0' },
      sharding: { enabled: true, namespace: NS, identity: name, ...TIMINGS },
      controllers: { gracefulShutdownTimeoutMs: 1_000 },
    });
    mgr
      .controller(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        // a Widget named slow-… takes 4 s, as a reconcile waiting on a long request (its signal cuts it short)
        const before = async () => {
          const ms = w.metadata.name?.startsWith('slow-') ? 4_000 : 30;
          await new Promise((r) => {
            const t = setTimeout(r, ms);
            ctx.signal.addEventListener('abort', () => r(clearTimeout(t)), { once: true });
          });
          ctx.signal.throwIfAborted();
        };
        // a Widget named …gen-… makes its child with generateName: a child it cannot see, it makes again
        await reconcileWidget(spans, name, w, ctx, { generate: w.metadata.name?.includes('gen-') ?? false, before });
      });
    const stop = new AbortController();
    replicas.set(name, { mgr, stop, proxy, run: mgr.start(stop.signal) });
  }

  const held = (name: string) => replicas.get(name)?.mgr.shards ?? [];
  const balanced = (names: string[]) => {
    const all = names.flatMap(held);
    return all.length === SHARD_COUNT && new Set(all).size === SHARD_COUNT && names.every((n) => held(n).length > 0);
  };

  /** The ConfigMaps a Widget controls, as the apiserver has them. */
  const childrenOf = async (uid: string | undefined) =>
    (await client.list(ConfigMaps, { namespace: NS })).items.filter(
      (c) => c.metadata.ownerReferences?.find((o) => o.controller)?.uid === uid,
    );

  async function converged(color: string): Promise<boolean> {
    const widgets = (await client.list(Widgets, { namespace: NS })).items;
    const children = (await client.list(ConfigMaps, { namespace: NS })).items.filter((c) =>
      c.metadata.name?.endsWith('-child'),
    );
    return (
      widgets.length === 24 &&
      widgets.every((w) => {
        const mine = children.filter((c) => c.metadata.ownerReferences?.[0]?.uid === w.metadata.uid);
        const label = w.metadata.labels?.[SHARD_LABEL];
        return (
          label !== undefined &&
          mine.length === 1 &&
          mine[0]?.data?.color === color &&
          mine[0]?.metadata.labels?.[SHARD_LABEL] === label
        );
      })
    );
  }

  before(async () => {
    ({ env, client } = await startEnv());
    await installWidgetCrd(client);
    await client.create(Namespaces, { metadata: { name: NS } });
  });
  after(async () => {
    for (const r of replicas.values()) {
      r.stop.abort();
      await r.run.catch(() => {});
      r.mgr.client.close();
      await r.proxy.close();
    }
    client?.close();
    await env?.stop();
  });

  test('three replicas split the shards, label objects and children, cache only their own', async () => {
    for (const name of ['a', 'b', 'c']) await replica(name);
    await waitFor('the shards to be split over three', async () => balanced(['a', 'b', 'c']), 30_000);
    for (let i = 0; i < 24; i++)
      await client.create(Widgets, { metadata: { name: `w-${i}`, namespace: NS }, spec: { color: 'red' } });
    await waitFor('every Widget to have its child', () => converged('red'), 60_000);
    for (const name of ['a', 'b', 'c']) {
      const mgr = replicas.get(name)?.mgr;
      const shards = new Set(held(name).map(String));
      const cached = (await mgr?.cache.list(Widgets)) ?? [];
      assert.ok(cached.length > 0 && cached.length < 24, `${name} caches ${cached.length} of 24 Widgets`);
      for (const w of cached)
        assert.ok(shards.has(w.metadata.labels?.[SHARD_LABEL] ?? ''), `${name} caches only its shards`);
    }
    const fences = (await client.list(Leases, { namespace: NS, labelSelector: 'opkit.dev/shard-role=shard' })).items;
    assert.equal(fences.length, SHARD_COUNT);
    assert.deepEqual(overlaps(spans), []);
  });

  test('a replica cut off stops at its renew deadline; the others take its shards after the lease duration', async () => {
    const c = replicas.get('c');
    assert.ok(c);
    const cShards = held('c');
    const cutAt = Date.now();
    if (process.env.SHARD_DEBUG) console.log(cutAt % 100000, 'test: c cut off');
    c.proxy.setMode({ kind: 'freeze' });
    await waitFor('c to drop its shards', async () => held('c').length === 0, 10_000);
    const stoppedAfter = Date.now() - cutAt;
    assert.ok(stoppedAfter <= TIMINGS.renewDeadlineMs + 1_500, `c stopped ${stoppedAfter} ms after the cut`);
    await waitFor('a and b to hold every shard', async () => balanced(['a', 'b']), 20_000);
    const takenAfter = Date.now() - cutAt;
    // c's Lease last changed at its last renewal before the cut, up to a (jittered) retry period earlier
    const earliest = TIMINGS.leaseDurationMs - 1.2 * TIMINGS.retryPeriodMs;
    assert.ok(takenAfter >= earliest, `taken ${takenAfter} ms after the cut, before the lease can have run out`);
    assert.ok(cShards.length > 0);
    for (let i = 0; i < 24; i++)
      await client.patch(Widgets, { namespace: NS, name: `w-${i}` }, { spec: { color: 'blue' } });
    await waitFor('a and b to reconcile every Widget', () => converged('blue'), 60_000);
    c.proxy.setMode({ kind: 'pass' });
    await waitFor('c to rejoin', async () => balanced(['a', 'b', 'c']), 30_000);
    assert.deepEqual(overlaps(spans), []);
  });

  test('a graceful stop hands its shards off at once; nothing is reconciled twice at a time, no child made twice', async () => {
    const b = replicas.get('b');
    assert.ok(b);
    const bShards = held('b');
    assert.ok(bShards.length > 0);
    const fencesOfB = async () =>
      (await client.list(Leases, { namespace: NS, labelSelector: 'opkit.dev/shard-role=shard' })).items.filter((l) =>
        bShards.some((n) => l.metadata.name?.endsWith(`-shard-${n}`)),
      );
    const stoppedAt = Date.now();
    b.stop.abort();
    await b.run;
    // the stop returned once every fence was freed and the member Lease deleted: nothing is left to expire
    assert.deepEqual(
      (await fencesOfB()).filter((l) => l.spec?.holderIdentity === 'b').map((l) => l.metadata.name),
      [],
      "b's fences are released when its stop returns",
    );
    const members = (await client.list(Leases, { namespace: NS, labelSelector: 'opkit.dev/shard-role=member' })).items;
    assert.deepEqual(members.map((m) => m.spec?.holderIdentity).sort(), ['a', 'c']);
    await waitFor('a and c to hold every shard', async () => balanced(['a', 'c']), 15_000);
    // when the takers wrote the fences (their acquireTime), not when this test saw it: a free fence is taken at once
    for (const fence of await fencesOfB()) {
      const takenAfter = Date.parse(fence.spec?.acquireTime ?? '') - stoppedAt;
      assert.ok(
        takenAfter < TIMINGS.leaseDurationMs,
        `${fence.metadata.name} taken by ${fence.spec?.holderIdentity} ${takenAfter} ms after the stop: released shards are taken without waiting for the lease`,
      );
    }
    for (let i = 0; i < 24; i++)
      await client.patch(Widgets, { namespace: NS, name: `w-${i}` }, { spec: { color: 'green' } });
    await waitFor('a and c to reconcile every Widget', () => converged('green'), 60_000);
    assert.deepEqual(overlaps(spans), []);
    assert.ok(spans.length >= 72);
  });

  test('started on objects made before it was sharded: owners and children get their shard, no child is made twice', async () => {
    for (const name of ['a', 'c']) {
      const r = replicas.get(name);
      r?.stop.abort();
      await r?.run;
    }
    const owners = [];
    for (let i = 0; i < 6; i++) {
      const labels = i === 0 ? { [SHARD_LABEL]: 'bogus' } : {};
      const w = await client.create(Widgets, {
        metadata: { name: `m-${i}`, namespace: NS, labels },
        spec: { color: 'green' },
      });
      owners.push(w);
      await client.create(ConfigMaps, {
        metadata: {
          name: `m-${i}-made-before`,
          namespace: NS,
          ownerReferences: [
            {
              apiVersion: 'test.opkit.dev/v1',
              kind: 'Widget',
              name: w.metadata.name ?? '',
              uid: w.metadata.uid ?? '',
              controller: true,
            },
          ],
        },
        data: { color: 'green' },
      });
    }
    await replica('d');
    await waitFor('d to hold every shard', async () => held('d').length === SHARD_COUNT, 20_000);
    await waitFor(
      'every Widget labelled, its child too, none made twice',
      async () => {
        const widgets = (await client.list(Widgets, { namespace: NS })).items.filter((w) =>
          w.metadata.name?.startsWith('m-'),
        );
        const children = (await client.list(ConfigMaps, { namespace: NS })).items.filter((c) =>
          c.metadata.name?.startsWith('m-'),
        );
        return (
          widgets.length === 6 &&
          children.length === 6 &&
          widgets.every((w) => {
            const label = w.metadata.labels?.[SHARD_LABEL];
            const child = children.find((c) => c.metadata.ownerReferences?.[0]?.uid === w.metadata.uid);
            return label !== undefined && label !== 'bogus' && child?.metadata.labels?.[SHARD_LABEL] === label;
          })
        );
      },
      30_000,
    );
    const reconciled = () =>
      new Set(spans.filter((s) => s.replica === 'd' && s.key.startsWith(`${NS}/m-`)).map((s) => s.key));
    await waitFor('d to reconcile them', async () => reconciled().size === 6, 30_000);
    await new Promise((r) => setTimeout(r, 1_000));
    const children = (await client.list(ConfigMaps, { namespace: NS })).items.filter((c) =>
      c.metadata.name?.startsWith('m-'),
    );
    assert.equal(children.length, 6, 'no child made twice');
    // an object moved by hand between two shards the replica holds stays in its cache, whichever watch tells first
    const moved = await client.get(Widgets, { namespace: NS, name: 'm-1' });
    const to = String((Number(moved.metadata.labels?.[SHARD_LABEL]) + 1) % SHARD_COUNT);
    await client.patch(Widgets, { namespace: NS, name: 'm-1' }, { metadata: { labels: { [SHARD_LABEL]: to } } });
    const d = replicas.get('d')?.mgr;
    await waitFor(
      'd to see the move',
      async () => (await d?.cache.get(Widgets, { namespace: NS, name: 'm-1' }))?.metadata.labels?.[SHARD_LABEL] === to,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    assert.ok(await d?.cache.get(Widgets, { namespace: NS, name: 'm-1' }), 'still cached after both watches told');
    assert.deepEqual(overlaps(spans), []);
  });

  test("an object relabelled into another replica's shard mid-reconcile: the old reconcile aborts, the new one waits", async () => {
    await replica('e');
    await waitFor('d and e to split the shards', async () => balanced(['d', 'e']), 30_000);
    const dShard = String(held('d')[0]);
    const eShard = String(held('e')[0]);
    await client.create(Widgets, {
      metadata: { name: 'slow-gen-0', namespace: NS, labels: { [SHARD_LABEL]: dShard } },
      spec: { color: 'red' },
    });
    const key = `${NS}/slow-gen-0`;
    await waitFor(
      'd to reconcile slow-gen-0 once',
      async () => spans.some((x) => x.key === key && x.end < Infinity),
      20_000,
    );
    await client.patch(Widgets, { namespace: NS, name: 'slow-gen-0' }, { spec: { color: 'blue' } });
    await waitFor('d to be reconciling it', async () => spans.some((x) => x.key === key && x.end === Infinity), 10_000);
    const movedAt = Date.now();
    await client.patch(
      Widgets,
      { namespace: NS, name: 'slow-gen-0' },
      { metadata: { labels: { [SHARD_LABEL]: eShard } } },
    );
    await waitFor('e to reconcile it', async () => spans.some((x) => x.key === key && x.replica === 'e'), 20_000);
    const dSpan = spans.find((x) => x.key === key && x.replica === 'd' && x.start < movedAt && x.end > movedAt);
    assert.ok(dSpan, 'd was reconciling it when it moved');
    assert.ok(dSpan.end - movedAt < 1_500, `d's reconcile ended ${dSpan.end - movedAt} ms after the move (aborted)`);
    assert.deepEqual(overlaps(spans), []);
    const w = await client.get(Widgets, { namespace: NS, name: 'slow-gen-0' });
    await waitFor(
      'its one child to follow it to e and turn blue',
      async () => {
        const mine = await childrenOf(w.metadata.uid);
        return (
          mine.length === 1 && mine[0]?.metadata.labels?.[SHARD_LABEL] === eShard && mine[0]?.data?.color === 'blue'
        );
      },
      20_000,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal((await childrenOf(w.metadata.uid)).length, 1, 'no child made twice');
  });

  test("a child whose label a full update removed gets its owner's back; it is never made twice", async () => {
    await client.create(Widgets, { metadata: { name: 'gen-1', namespace: NS }, spec: { color: 'red' } });
    await waitFor('gen-1 to have its child', async () => {
      const w = await client.get(Widgets, { namespace: NS, name: 'gen-1' });
      return (await childrenOf(w.metadata.uid)).length === 1;
    });
    for (const owner of ['w-3', 'gen-1']) {
      const w = await client.get(Widgets, { namespace: NS, name: owner });
      const [child] = await childrenOf(w.metadata.uid);
      assert.ok(child, `${owner} has its child`);
      const { [SHARD_LABEL]: _dropped, ...rest } = child.metadata.labels ?? {};
      await client.update(ConfigMaps, { ...child, metadata: { ...child.metadata, labels: rest } });
      const ref = { namespace: NS, name: child.metadata.name ?? '' };
      const shard = w.metadata.labels?.[SHARD_LABEL];
      await waitFor(
        `${owner}'s child to carry its owner's shard again`,
        async () => (await client.get(ConfigMaps, ref)).metadata.labels?.[SHARD_LABEL] === shard,
        20_000,
      );
      await client.patch(Widgets, { namespace: NS, name: owner }, { spec: { color: 'purple' } });
      await waitFor(
        `${owner}'s child to follow it`,
        async () => (await client.get(ConfigMaps, ref)).data?.color === 'purple',
        20_000,
      );
      assert.equal((await childrenOf(w.metadata.uid)).length, 1, `${owner}: no second child`);
    }
    assert.deepEqual(overlaps(spans), []);
  });
});
