/**
 * Where opkit must behave as client-go and controller-runtime do, on a real control plane: multibyte data across
 * network chunks, expectations with terminating children, aborted reconciles, old and new owners on an update, a
 * bounded drain with a hung request, adopting and releasing children, and impersonation.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { Cache } from '../src/cache/index.ts';
import { type ConfigMap, ConfigMaps, Namespaces } from '../src/client/builtins.ts';
import { type Client, Client as KubeClient, loadConfig } from '../src/client/index.ts';
import { ControllerBuilder } from '../src/controller/index.ts';
import { ClaimError, claimChildren, controllerOf } from '../src/helpers/index.ts';
import { ApiError, done, isApiError, type ReconcileRequest } from '../src/index.ts';
import { clientVia, type Widget, Widgets, waitFor, widgetControlPlane } from './support.ts';

describe('client-go and controller-runtime semantics on a real apiserver', () => {
  const plane = widgetControlPlane();
  let env: Environment;
  let client: Client;
  before(() => {
    ({ env, client } = plane);
  });
  const stopper = (): AbortController => plane.stopper();

  async function namespace(name: string): Promise<void> {
    await client.create(Namespaces, { metadata: { name } });
  }

  test('multibyte values in an object spanning many network chunks reach the cache intact', async () => {
    await namespace('utf8');
    const value = `héllo wörld — 日本語 — 😀🚀 — ${'ü€𝄞'.repeat(40_000)}`; // ~360 KB of multibyte text
    const cache = new Cache({ client, namespace: 'utf8' });
    const ctl = stopper();
    cache.start(ctl.signal);
    await cache.list(ConfigMaps); // synced: the next object arrives through the watch
    await client.create(ConfigMaps, { metadata: { name: 'big', namespace: 'utf8' }, data: { value } });
    let seen: ConfigMap | undefined;
    await waitFor('the watch to deliver the object', async () => {
      seen = await cache.get(ConfigMaps, { namespace: 'utf8', name: 'big' });
      return seen !== undefined;
    });
    assert.equal(seen?.data?.value?.length, value.length);
    assert.ok(seen?.data?.value === value, 'byte-for-byte equal, no U+FFFD');
    const listed = await client.list(ConfigMaps, { namespace: 'utf8' });
    assert.ok(listed.items.find((c) => c.metadata.name === 'big')?.data?.value === value, 'and through a list');
  });

  test('a child that is terminating (finalizer, grace period) no longer holds its owner back', async () => {
    await namespace('term');
    const cache = new Cache({ client, namespace: 'term' });
    const reconciledAt: number[] = [];
    let deletedAt = 0;
    const c = new ControllerBuilder({ client, cache })
      .for(Widgets)
      .owns(ConfigMaps)
      .complete(async (req: ReconcileRequest, ctx) => {
        const w = await ctx.cache.get(Widgets, req);
        if (!w) return done();
        reconciledAt.push(performance.now());
        const children = await ctx.cache.list(ConfigMaps, {
          index: { name: 'controller', value: w.metadata.uid ?? '' },
        });
        const live = children.filter((c) => !c.metadata.deletionTimestamp);
        if (live.length > (w.spec?.replicas ?? 0)) {
          const victim = live[0] as ConfigMap;
          await ctx.rawClient.delete(ConfigMaps, { namespace: 'term', name: victim.metadata.name ?? '' });
          ctx.expect.deleted(ConfigMaps, victim);
          deletedAt = performance.now();
        }
        return done();
      });
    const ctl = stopper();
    void c.start(ctl.signal);
    const w = await client.create(Widgets, { metadata: { name: 'w', namespace: 'term' }, spec: { replicas: 0 } });
    await client.create(ConfigMaps, {
      metadata: {
        name: 'held',
        namespace: 'term',
        finalizers: ['test.opkit.dev/hold'], // stays terminating until the test lets go, like a pod in its grace period
        ownerReferences: [
          { apiVersion: Widgets.apiVersion, kind: 'Widget', name: 'w', uid: w.metadata.uid ?? '', controller: true },
        ],
      },
    });
    await waitFor('the child to be deleted', async () => deletedAt > 0);
    // the next change of the owner is reconciled at once, although the child still exists (terminating)
    await client.patch(Widgets, { namespace: 'term', name: 'w' }, { metadata: { labels: { poke: '1' } } });
    const t0 = performance.now();
    await waitFor('a reconcile after the delete', async () => reconciledAt.some((t) => t > deletedAt + 50));
    assert.ok(performance.now() - t0 < 5_000, 'not held back by the terminating child');
    const held = await client.get(ConfigMaps, { namespace: 'term', name: 'held' });
    assert.ok(held.metadata.deletionTimestamp, 'the child is still terminating');
    await client.patch(ConfigMaps, { namespace: 'term', name: 'held' }, { metadata: { finalizers: null } });
  });

  test('an Aborted error of the reconcile itself is retried; only the stop means stop', async () => {
    await namespace('abrt');
    const cache = new Cache({ client, namespace: 'abrt' });
    let calls = 0;
    const c = new ControllerBuilder({ client, cache }).for(Widgets).complete(async (req, ctx) => {
      calls += 1;
      if (calls === 1) {
        // a call bounded by the reconciler's own timeout
        await ctx.rawClient.get(Widgets, req, { signal: AbortSignal.timeout(1) });
        await new Promise((r) => setTimeout(r, 50));
        throw new ApiError('Aborted', 'GET: aborted'); // in case the GET was quicker than 1 ms
      }
      return done();
    });
    void c.start(stopper().signal);
    await client.create(Widgets, { metadata: { name: 'a', namespace: 'abrt' }, spec: { replicas: 1 } });
    await waitFor('a second reconcile without any new event', async () => calls >= 2);
  });

  test('an update enqueues the old object’s requests too: a child that moves to another owner reconciles both', async () => {
    await namespace('move');
    const cache = new Cache({ client, namespace: 'move' });
    const reconciled: string[] = [];
    const c = new ControllerBuilder({ client, cache })
      .for(Widgets)
      .watches(ConfigMaps, (cm: ConfigMap) => {
        const owner = cm.metadata.labels?.owner;
        return owner ? [{ namespace: 'move', name: owner }] : [];
      })
      .complete(async (req) => {
        reconciled.push(req.name);
        return done();
      });
    void c.start(stopper().signal);
    await client.create(ConfigMaps, { metadata: { name: 'child', namespace: 'move', labels: { owner: 'first' } } });
    await waitFor('first to be reconciled', async () => reconciled.includes('first'));
    reconciled.length = 0;
    await client.patch(ConfigMaps, { namespace: 'move', name: 'child' }, { metadata: { labels: { owner: 'second' } } });
    await waitFor(
      'both owners to be reconciled',
      async () => reconciled.includes('first') && reconciled.includes('second'),
    );
  });

  test('stopping a controller whose reconcile hangs in a request takes the drain time, not the request timeout', async () => {
    await namespace('hang');
    const proxy = await FaultProxy.start({ target: targetOf(env.server) });
    const via = await clientVia(env, proxy.url);
    try {
      const cache = new Cache({ client, namespace: 'hang' });
      let inRequest = false;
      const c = new ControllerBuilder({ client: via, cache })
        .for(Widgets)
        .withOptions({ gracefulShutdownTimeoutMs: 500 })
        .complete(async (req, ctx) => {
          proxy.setMode({ kind: 'freeze' });
          inRequest = true;
          await ctx.rawClient.get(Widgets, req); // no signal passed: the context's client carries it
          return done();
        });
      const ctl = new AbortController();
      const running = c.start(ctl.signal);
      await client.create(Widgets, { metadata: { name: 'h', namespace: 'hang' }, spec: { replicas: 1 } });
      await waitFor('the reconcile to hang in its request', async () => inRequest);
      await new Promise((r) => setTimeout(r, 200));
      const t0 = performance.now();
      ctl.abort();
      await running;
      const took = performance.now() - t0;
      assert.ok(took < 3_000, `stopped in ${Math.round(took)} ms (drain 500 ms)`);
    } finally {
      proxy.setMode({ kind: 'pass' });
      via.close();
      await proxy.close();
    }
  });

  test('claimChildren adopts matching orphans, releases children that stopped matching, leaves others’ alone', async () => {
    await namespace('claim');
    const owner = await client.create(Widgets, { metadata: { name: 'o', namespace: 'claim' } });
    const other = await client.create(Widgets, { metadata: { name: 'other', namespace: 'claim' } });
    const ref = (w: Widget) => ({
      apiVersion: Widgets.apiVersion,
      kind: 'Widget',
      name: w.metadata.name ?? '',
      uid: w.metadata.uid ?? '',
      controller: true,
    });
    const cm = (name: string, app: string, controller?: Widget) =>
      client.create(ConfigMaps, {
        metadata: {
          name,
          namespace: 'claim',
          labels: { app },
          ...(controller ? { ownerReferences: [ref(controller)] } : {}),
        },
      });
    const orphan = await cm('orphan', 'o');
    const mine = await cm('mine', 'o', owner);
    const moved = await cm('moved', 'elsewhere', owner);
    const theirs = await cm('theirs', 'o', other);
    const stranger = await cm('stranger', 'elsewhere');
    const claim = (o: Widget) =>
      claimChildren({
        client,
        ownerType: Widgets,
        owner: o,
        childType: ConfigMaps,
        candidates: [orphan, mine, moved, theirs, stranger, mine],
        matches: (c) => c.metadata.labels?.app === 'o',
      });
    const r = await claim(owner);
    assert.deepEqual(r.claimed.map((c) => c.metadata.name).sort(), ['mine', 'orphan']);
    assert.deepEqual(
      r.adopted.map((c) => c.metadata.name),
      ['orphan'],
    );
    assert.deepEqual(
      r.released.map((c) => c.metadata.name),
      ['moved'],
    );
    const now = async (name: string) => controllerOf(await client.get(ConfigMaps, { namespace: 'claim', name }))?.uid;
    assert.equal(await now('orphan'), owner.metadata.uid, 'adopted');
    assert.equal(await now('moved'), undefined, 'released');
    assert.equal(await now('theirs'), other.metadata.uid, 'left alone');
    assert.equal(await now('stranger'), undefined, 'not matching: not adopted');

    // claiming again from the same (now stale) reads: the conflicts are resolved by a fresh read, not errors
    const again = await claim(owner);
    assert.deepEqual(again.claimed.map((c) => c.metadata.name).sort(), ['mine', 'orphan']);

    // an owner deleted and re-created under the same name: the stale one (old uid) may not adopt
    await client.delete(Widgets, { namespace: 'claim', name: 'o' });
    await waitFor('o to be gone', async () =>
      client.get(Widgets, { namespace: 'claim', name: 'o' }).then(
        () => false,
        (e: unknown) => isApiError(e, 'NotFound'),
      ),
    );
    await client.create(Widgets, { metadata: { name: 'o', namespace: 'claim' } });
    const fresh = await cm('late-orphan', 'o');
    await assert.rejects(
      claimChildren({
        client,
        ownerType: Widgets,
        owner,
        childType: ConfigMaps,
        candidates: [fresh],
        matches: () => true,
      }),
      (err) => err instanceof ClaimError && err.code === 'OwnerChanged',
    );
    assert.equal(await now('late-orphan'), undefined);
  });

  test('impersonation from the kubeconfig (as, as-groups) is applied: the apiserver judges the impersonated user', async () => {
    const base = await loadConfig({ path: env.kubeconfigPath });
    const jane = new KubeClient({ ...base, impersonate: { user: 'jane', groups: ['devs'] } });
    try {
      const err = await jane.list(Namespaces).catch((e: unknown) => e);
      assert.ok(isApiError(err, 'Forbidden'), `expected Forbidden, got ${String(err)}`);
      assert.match((err as ApiError).message, /"jane"/);
    } finally {
      jane.close();
    }
  });
});
