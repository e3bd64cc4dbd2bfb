/**
 * The object-first reconciler (`builder.reconcile((obj, ctx) => …)`) against a real apiserver: what its context does
 * for the user — owner references, expectations, uid preconditions, status only on change, the signal, Events,
 * typed indexes — and the error policy and finalizer hooks.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { Cache } from '../src/cache/index.ts';
import { type ConfigMap, ConfigMaps, Events, Namespaces } from '../src/client/builtins.ts';
import { type Client, metadataOnly } from '../src/client/index.ts';
import { ControllerBuilder, giveUp } from '../src/controller/index.ts';
import { UsageError } from '../src/errors.ts';
import { controllerOf, OwnerReferenceError } from '../src/helpers/index.ts';
import { defineIndex, done, isApiError, requeueAfter } from '../src/index.ts';
import { clientVia, recordingLogger, Widgets, waitFor, widgetControlPlane } from './support.ts';

/** The ConfigMaps in `namespace` that `owner` controls, read from the server, those being deleted left out. */
async function liveChildren(client: Client, namespace: string, owner: string) {
  return (await client.list(ConfigMaps, { namespace })).items.filter(
    (cm) => !cm.metadata.deletionTimestamp && controllerOf(cm)?.name === owner,
  );
}

describe('object-first reconcilers against a real apiserver', () => {
  const plane = widgetControlPlane();
  let env: Environment;
  let client: Client;
  before(() => {
    ({ env, client } = plane);
  });
  const stopper = (): AbortSignal => plane.stopper().signal;

  test('ctx.create/delete/status: owned children, exactly N with a lagging cache, status written only on change', async () => {
    await client.create(Namespaces, { metadata: { name: 'obj' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'delay', ms: 300 } });
    const slow = await clientVia(env, proxy.url);
    const cache = new Cache({ client: slow, namespace: 'obj' }); // a cache that lags 300 ms behind the writes
    let statusWrites = 0;
    let reconciles = 0;
    const c = new ControllerBuilder({ client, cache })
      .for(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        reconciles += 1;
        const children = await ctx.owned(ConfigMaps);
        const want = w.spec?.replicas ?? 0;
        for (let i = children.length; i < want; i++) {
          await ctx.create(ConfigMaps, { metadata: { generateName: `${w.metadata.name}-` }, data: { i: String(i) } });
        }
        for (const extra of children.slice(want)) await ctx.delete(ConfigMaps, extra);
        if (await ctx.status({ replicas: Math.min(children.length, want) })) statusWrites += 1;
        return done();
      });
    const stop = new AbortController();
    const running = c.start(stop.signal);
    try {
      await client.create(Widgets, { metadata: { name: 'w', namespace: 'obj' }, spec: { replicas: 3 } });
      const owned = () => liveChildren(client, 'obj', 'w');
      await waitFor('3 owned ConfigMaps and status.replicas 3', async () => {
        const w = await client.get(Widgets, { namespace: 'obj', name: 'w' });
        return w.status?.replicas === 3 && (await owned()).length === 3;
      });
      for (const cm of await owned()) {
        assert.equal(controllerOf(cm)?.kind, 'Widget', 'ctx.create set the controller reference');
        assert.equal(cm.metadata.namespace, 'obj', "in the owner's namespace");
      }
      await client.patch(Widgets, { namespace: 'obj', name: 'w' }, { spec: { replicas: 1 } });
      await waitFor('1 owned ConfigMap', async () => (await owned()).length === 1);
      await waitFor('status.replicas 1, in the cache too', async () => {
        const w = await cache.get(Widgets, { namespace: 'obj', name: 'w' });
        return w?.status?.replicas === 1;
      });
      await new Promise((r) => setTimeout(r, 500)); // reconciles that were under way end
      const writes = statusWrites;
      const before = reconciles;
      for (let i = 0; i < 5; i++) c.enqueue({ namespace: 'obj', name: 'w' });
      await waitFor('another reconcile', async () => reconciles > before);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(statusWrites, writes, 'an unchanged status is not written again');
      assert.equal((await owned()).length, 1, 'never more than asked for');
    } finally {
      stop.abort();
      await running;
      await proxy.close();
      slow.close();
    }
  });

  test('read-your-writes: with a cache 300 ms behind, ctx.update never reads back an older version (raw writes do)', async () => {
    await client.create(Namespaces, { metadata: { name: 'ryw' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'delay', ms: 300 } });
    const slow = await clientVia(env, proxy.url);
    const stale = { ctx: 0, raw: 0 };
    const c = new ControllerBuilder({ client, cache: new Cache({ client: slow, namespace: 'ryw' }) })
      .for(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        const [child] = await ctx.owned(ConfigMaps);
        if (!child) {
          await ctx.create(ConfigMaps, { metadata: { name: `${w.metadata.name}-n` }, data: { n: '0' } });
          return done();
        }
        const n = Number(child.data?.n);
        if (n >= 8) return done();
        const next = { ...child, data: { n: String(n + 1) } };
        const raw = w.metadata.name === 'raw';
        try {
          // the cached copy's resourceVersion is the precondition: a stale read is a Conflict
          if (raw) await ctx.rawClient.update(ConfigMaps, next);
          else await ctx.update(ConfigMaps, next);
        } catch (err) {
          if (!isApiError(err, 'Conflict')) throw err;
          stale[raw ? 'raw' : 'ctx'] += 1;
        }
        return requeueAfter(10); // at once again, as a busy controller would
      });
    void c.start(stopper());
    try {
      for (const name of ['ctx', 'raw'])
        await client.create(Widgets, { metadata: { name, namespace: 'ryw' }, spec: { replicas: 1 } });
      const n = async (name: string) =>
        Number((await client.getIfExists(ConfigMaps, { namespace: 'ryw', name: `${name}-n` }))?.data?.n ?? -1);
      await waitFor('both counters at 8', async () => (await n('ctx')) === 8 && (await n('raw')) === 8, 60_000);
      assert.equal(stale.ctx, 0, 'ctx.update: the next reconcile waited for its own write');
      assert.ok(stale.raw > 0, 'the control: a raw update read back the older version and was refused');
    } finally {
      proxy.setMode({ kind: 'pass' });
      slow.close();
      await proxy.close();
    }
  });

  test('ctx.create whose answer is lost (the apiserver stored the child, the connection reset): no second child', async () => {
    await client.create(Namespaces, { metadata: { name: 'obj-lost' } });
    // writes answer 1 s late (the window to reset in); the cache lags 1.5 s, longer than the 5 ms retry of the reconcile
    const writes = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'delay', ms: 1_000 } });
    const lagging = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'delay', ms: 1_500 } });
    const [writer, reader] = [await clientVia(env, writes.url), await clientVia(env, lagging.url)];
    const cache = new Cache({ client: reader, namespace: 'obj-lost' });
    const failures: string[] = [];
    const c = new ControllerBuilder({ client: writer, cache })
      .for(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        if ((await ctx.owned(ConfigMaps)).length >= (w.spec?.replicas ?? 0)) return done();
        try {
          await ctx.create(ConfigMaps, { metadata: { generateName: 'lost-' } });
        } catch (err) {
          failures.push(isApiError(err) ? err.code : String(err));
          throw err;
        }
        return done();
      });
    const stop = new AbortController();
    const running = c.start(stop.signal);
    try {
      await client.create(Widgets, { metadata: { name: 'l', namespace: 'obj-lost' }, spec: { replicas: 1 } });
      const owned = () => liveChildren(client, 'obj-lost', 'l');
      await waitFor('the child stored', async () => (await owned()).length > 0, 30_000, 10);
      writes.setMode({ kind: 'reset' }); // before its answer gets through
      await new Promise((r) => setTimeout(r, 50));
      writes.setMode({ kind: 'pass' });
      await waitFor('the reset create failed', async () => failures.length > 0);
      assert.equal(failures[0], 'Network', 'the create got no answer');
      await new Promise((r) => setTimeout(r, 3_000)); // the cache has caught up, the reconciles after it ended
      const children = await owned();
      assert.equal(children.length, 1, `one child, not a second one: ${children.map((cm) => cm.metadata.name)}`);
      assert.equal(cache.informer(ConfigMaps).store.get(`obj-lost/${children[0]?.metadata.name}`) !== undefined, true);
    } finally {
      stop.abort();
      await running;
      await Promise.all([writes.close(), lagging.close()]);
      writer.close();
      reader.close();
    }
  });

  test('owns(metadataOnly(kind)): children cached as metadata only, exactly N of them, reconciled on their changes', async () => {
    await client.create(Namespaces, { metadata: { name: 'obj-meta' } });
    const cache = new Cache({ client, namespace: 'obj-meta' });
    const c = new ControllerBuilder({ client, cache })
      .for(Widgets)
      .owns(metadataOnly(ConfigMaps))
      .reconcile(async (w, ctx) => {
        const children = await ctx.owned(metadataOnly(ConfigMaps));
        const want = w.spec?.replicas ?? 0;
        for (let i = children.length; i < want; i++) {
          await ctx.create(ConfigMaps, {
            metadata: { generateName: `${w.metadata.name}-` },
            data: { big: 'ü'.repeat(50_000) },
          });
        }
        for (const extra of children.slice(want)) await ctx.delete(ConfigMaps, extra);
        await ctx.status({ replicas: Math.min(children.length, want) });
        return done();
      });
    const stop = new AbortController();
    const running = c.start(stop.signal);
    try {
      await client.create(Widgets, { metadata: { name: 'm', namespace: 'obj-meta' }, spec: { replicas: 2 } });
      const owned = () => liveChildren(client, 'obj-meta', 'm');
      await waitFor('2 owned ConfigMaps and status.replicas 2', async () => {
        const w = await client.get(Widgets, { namespace: 'obj-meta', name: 'm' });
        return w.status?.replicas === 2 && (await owned()).length === 2;
      });
      const cached = cache.informers().filter((i) => i.resource.plural === 'configmaps');
      assert.deepEqual(
        cached.map((i) => i.resource.metadataOnly),
        [true],
        'one ConfigMap informer, the metadata-only one',
      );
      for (const cm of cached[0]?.store.values() ?? []) assert.equal('data' in cm, false);
      // a child deleted behind the controller's back is replaced: its metadata watch drives the reconcile
      const [first] = await owned();
      await client.delete(ConfigMaps, { namespace: 'obj-meta', name: first?.metadata.name ?? '' });
      await waitFor('the child replaced', async () => {
        const now = await owned();
        return now.length === 2 && !now.some((cm) => cm.metadata.name === first?.metadata.name);
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await owned()).length, 2, 'never more than asked for');
    } finally {
      stop.abort();
      await running;
    }
  });

  test('the reconcile signal reaches ctx requests: a drain cuts a hung ctx.create short', async () => {
    await client.create(Namespaces, { metadata: { name: 'hang' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'pass' } });
    const frozen = await clientVia(env, proxy.url);
    let outcome: unknown;
    let entered: () => void = () => {};
    const inCreate = new Promise<void>((r) => {
      entered = r;
    });
    const c = new ControllerBuilder({ client: frozen, cache: new Cache({ client, namespace: 'hang' }) })
      .for(Widgets)
      .withOptions({ gracefulShutdownTimeoutMs: 200 })
      .reconcile(async (w, ctx) => {
        proxy.setMode({ kind: 'freeze' });
        entered();
        try {
          await ctx.create(ConfigMaps, { metadata: { name: `${w.metadata.name}-child` } });
        } catch (err) {
          outcome = err;
          throw err;
        }
      });
    const stop = new AbortController();
    const running = c.start(stop.signal);
    try {
      await client.create(Widgets, { metadata: { name: 'h', namespace: 'hang' }, spec: { replicas: 1 } });
      await inCreate;
      const t0 = performance.now();
      stop.abort();
      await running;
      assert.ok(performance.now() - t0 < 5_000, 'stopped within the drain time, not the request timeout');
      assert.ok(isApiError(outcome, 'Aborted'), `the hung create was aborted (${String(outcome)})`);
    } finally {
      stop.abort();
      await proxy.close();
      frozen.close();
    }
  });

  test('onError overrides the default policy; ctx.events records about the object; typed index handles', async () => {
    await client.create(Namespaces, { metadata: { name: 'pol' } });
    const byColor = defineIndex(ConfigMaps, 'color', (cm) => (cm.data?.color ? [cm.data.color] : []));
    await client.create(ConfigMaps, { metadata: { name: 'red-1', namespace: 'pol' }, data: { color: 'red' } });
    const log = recordingLogger();
    let calls = 0;
    let seen: string | undefined;
    let reds = -1;
    const cache = new Cache({ client, namespace: 'pol' });
    const c = new ControllerBuilder({ client, cache, log })
      .for(Widgets)
      .onError((w, err, ctx) => {
        seen = `${w.metadata.name}: ${(err as Error).message}`;
        ctx.events.warning('Broken', 'reconcile failed');
        return giveUp('warn');
      })
      .reconcile(async (_w, ctx) => {
        calls += 1;
        reds = (await ctx.cache.list(ConfigMaps, { index: byColor.is('red') })).length;
        throw new Error('boom');
      });
    const stop = stopper();
    void c.start(stop);
    await client.create(Widgets, { metadata: { name: 'p', namespace: 'pol' }, spec: { replicas: 1 } });
    await waitFor('the policy to run', async () => seen !== undefined);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(calls, 1, 'giveUp: not retried');
    assert.equal(seen, 'p: boom');
    assert.equal(reds, 1, 'the typed index found the red ConfigMap');
    assert.ok(log.entries.some((e) => e.level === 'warn' && e.message === 'reconcile failed: not retrying'));
    await waitFor('the Warning Event about the Widget', async () =>
      (await client.list(Events, { namespace: 'pol' })).items.some(
        (e) => e.reason === 'Broken' && e.type === 'Warning' && e.involvedObject.name === 'p',
      ),
    );
  });

  test('ctx.update/patch keep the controller reference on a child; ctx.apiReader reads live in the cache shapes', async () => {
    await client.create(Namespaces, { metadata: { name: 'obj-upd' } });
    const seen: {
      updated?: ConfigMap;
      patched?: ConfigMap;
      missing?: unknown;
      listed?: string[];
      noRv?: unknown;
      handedOver?: unknown[];
    } = {};
    const c = new ControllerBuilder({ client, cache: new Cache({ client, namespace: 'obj-upd' }) })
      .for(Widgets)
      .owns(ConfigMaps)
      .reconcile(async (w, ctx) => {
        const [child] = await ctx.owned(ConfigMaps);
        if (!child) {
          await ctx.create(ConfigMaps, { metadata: { name: `${w.metadata.name}-cfg` }, data: { v: 'created' } });
          return done();
        }
        if (seen.patched) return done();
        // an update and a patch that would drop every owner reference keep this Widget's controller reference
        const dropped = { ...child, metadata: { ...child.metadata, ownerReferences: [] }, data: { v: 'updated' } };
        seen.updated = await ctx.update(ConfigMaps, dropped);
        seen.patched = await ctx.patch(ConfigMaps, seen.updated, {
          metadata: { ownerReferences: null, labels: { patched: 'yes' } },
        });
        seen.missing = await ctx.apiReader.get(ConfigMaps, { namespace: 'obj-upd', name: 'none' });
        seen.listed = (
          await ctx.apiReader.list(ConfigMaps, { namespace: 'obj-upd', labelSelector: 'patched=yes' })
        ).map((cm) => cm.metadata.name ?? '');
        const { resourceVersion: _, ...noVersion } = seen.patched.metadata;
        seen.noRv = await ctx.update(ConfigMaps, { ...seen.patched, metadata: noVersion }).catch((err: unknown) => err);
        // an update or a patch that would hand the child to another controller fails before any request
        const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'other-uid', controller: true };
        const handed = { ...seen.patched, metadata: { ...seen.patched.metadata, ownerReferences: [other] } };
        seen.handedOver = [
          await ctx.update(ConfigMaps, handed).catch((err: unknown) => err),
          await ctx.patch(ConfigMaps, seen.patched, { metadata: { ownerReferences: [other] } }).catch((e) => e),
        ];
        return done();
      });
    const stop = stopper();
    void c.start(stop);
    await client.create(Widgets, { metadata: { name: 'u', namespace: 'obj-upd' }, spec: { replicas: 1 } });
    await waitFor('the child updated and patched', async () => seen.noRv !== undefined);
    assert.equal(seen.updated?.data?.v, 'updated');
    assert.equal(controllerOf(seen.updated ?? { metadata: {} })?.name, 'u', 'the update kept the controller reference');
    assert.equal(seen.patched?.metadata.labels?.patched, 'yes');
    assert.equal(controllerOf(seen.patched ?? { metadata: {} })?.name, 'u', 'the patch kept it too');
    assert.equal(seen.missing, undefined, 'apiReader.get: undefined for a missing object, as the cache');
    assert.deepEqual(seen.listed, ['u-cfg'], 'apiReader.list: the items, as the cache');
    assert.ok(
      seen.noRv instanceof UsageError && seen.noRv.code === 'InvalidArgument',
      'update needs a resourceVersion',
    );
    for (const err of seen.handedOver ?? [])
      assert.ok(err instanceof OwnerReferenceError && err.code === 'AlreadyOwned', `hand-over refused: ${err}`);
    assert.equal(seen.handedOver?.length, 2);
    const live = await client.get(ConfigMaps, { namespace: 'obj-upd', name: 'u-cfg' });
    assert.equal(
      controllerOf(live)?.uid,
      (await client.get(Widgets, { namespace: 'obj-upd', name: 'u' })).metadata.uid,
    );
  });

  test('ctx.apply with force: false is a Conflict on a field another manager owns; forced, it takes it; each reconcile is logged at debug', async () => {
    await client.create(Namespaces, { metadata: { name: 'obj-apply' } });
    // someone else set data.v with their own field manager
    await client.apply(
      ConfigMaps,
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a-cfg', namespace: 'obj-apply' },
        data: { v: 'theirs' },
      },
      { fieldManager: 'someone-else' },
    );
    const outcome: { unforced?: unknown; forced?: ConfigMap } = {};
    const log = recordingLogger();
    const c = new ControllerBuilder({ client, cache: new Cache({ client, namespace: 'obj-apply' }), log })
      .named('applier')
      .for(Widgets)
      .reconcile(async (w, ctx) => {
        if (outcome.forced) return done();
        const desired = { metadata: { name: `${w.metadata.name}-cfg` }, data: { v: 'ours' } };
        outcome.unforced = await ctx
          .apply(ConfigMaps, desired, { owned: false, force: false })
          .catch((err: unknown) => err);
        outcome.forced = await ctx.apply(ConfigMaps, desired, { owned: false });
        return done();
      });
    void c.start(stopper());
    await client.create(Widgets, { metadata: { name: 'a', namespace: 'obj-apply' }, spec: { replicas: 1 } });
    await waitFor('both applies', async () => outcome.forced);
    assert.ok(isApiError(outcome.unforced, 'Conflict'), String(outcome.unforced));
    assert.ok(
      outcome.unforced.causes.some((c) => c.reason === 'FieldManagerConflict'),
      'what the default error policy logs at error',
    );
    assert.match((outcome.unforced as Error).message, /someone-else/);
    assert.match((outcome.unforced as Error).message, /\.data\.v/);
    assert.equal(outcome.forced?.data?.v, 'ours');
    const reconciled = await waitFor('the debug line', async () =>
      log.entries.find((e) => e.level === 'debug' && e.message === 'reconciled'),
    );
    assert.equal(reconciled.fields.controller, 'applier');
    assert.equal(reconciled.fields.name, 'a');
    assert.equal(reconciled.fields.namespace, 'obj-apply');
    assert.equal(typeof reconciled.fields.durationMs, 'number');
    assert.equal(typeof reconciled.fields.reconcileID, 'string');
  });

  test('finalize: the finalizer is added first, cleanup runs once on delete, then the object goes', async () => {
    await client.create(Namespaces, { metadata: { name: 'fin' } });
    const cleaned: string[] = [];
    const c = new ControllerBuilder({ client, cache: new Cache({ client, namespace: 'fin' }) })
      .for(Widgets)
      .finalize('test.opkit.dev/cleanup', async (w) => {
        cleaned.push(w.metadata.name ?? '');
      })
      .reconcile(async (w, ctx) => {
        await ctx.status({ phase: w.metadata.finalizers?.includes('test.opkit.dev/cleanup') ? 'Guarded' : 'Open' });
      });
    const stop = stopper();
    void c.start(stop);
    await client.create(Widgets, { metadata: { name: 'f', namespace: 'fin' }, spec: { replicas: 1 } });
    await waitFor('status Guarded', async () => {
      const w = await client.get(Widgets, { namespace: 'fin', name: 'f' });
      return w.status?.phase === 'Guarded';
    });
    await client.delete(Widgets, { namespace: 'fin', name: 'f' });
    await waitFor('the Widget to be gone', async () => {
      return (await client.getIfExists(Widgets, { namespace: 'fin', name: 'f' })) === undefined;
    });
    assert.deepEqual(cleaned, ['f']);
  });
});
