import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { type Environment, FaultProxy, targetOf } from '@opkit/testenv';
import { Cache } from '../src/cache/index.ts';
import { ConfigMaps, Namespaces } from '../src/client/builtins.ts';
import type { Client } from '../src/client/index.ts';
import { ControllerBuilder, generationChanged } from '../src/controller/index.ts';
import { done, isApiError, type ReconcileRequest, requeueAfter, TerminalError } from '../src/index.ts';
import { Metrics } from '../src/metrics.ts';
import { clientVia, recordingLogger, type Widget, Widgets, waitFor, widgetControlPlane } from './support.ts';

describe('controllers against a real apiserver', () => {
  const plane = widgetControlPlane();
  let env: Environment;
  let client: Client;
  before(() => {
    ({ env, client } = plane);
  });
  const stopper = (): AbortSignal => plane.stopper().signal;

  test('expectations: with watch events delayed, repeated reconciles of a scale-up create exactly N children', async () => {
    await client.create(Namespaces, { metadata: { name: 'exp' } });
    const proxy = await FaultProxy.start({ target: targetOf(env.server), mode: { kind: 'delay', ms: 400 } });
    const slow = await clientVia(env, proxy.url);
    const cache = new Cache({ client: slow, namespace: 'exp' }); // a cache that lags 400 ms behind the writes
    const log = recordingLogger();
    const c = new ControllerBuilder({ client, cache, log })
      .for(Widgets)
      .owns(ConfigMaps)
      .withOptions({ maxConcurrentReconciles: 2 })
      .complete(async (req: ReconcileRequest, ctx) => {
        const w = await ctx.cache.get(Widgets, req);
        if (!w) return done();
        const children = await ctx.cache.list(ConfigMaps, {
          index: { name: 'controller', value: w.metadata.uid as string },
        });
        const useExpectations = w.metadata.name === 'with';
        for (let i = children.length; i < (w.spec?.replicas ?? 0); i++) {
          const child = await ctx.rawClient.create(ConfigMaps, {
            metadata: {
              generateName: `${w.metadata.name}-`,
              namespace: 'exp',
              ownerReferences: [
                {
                  apiVersion: Widgets.apiVersion,
                  kind: 'Widget',
                  name: w.metadata.name as string,
                  uid: w.metadata.uid as string,
                  controller: true,
                },
              ],
            },
          });
          if (useExpectations) ctx.expect.created(ConfigMaps, child);
        }
        return requeueAfter(25); // reconcile over and over, as a busy controller would
      });
    const signal = stopper();
    const running = c.start(signal);
    try {
      for (const name of ['with', 'without']) {
        await client.create(Widgets, { metadata: { name, namespace: 'exp' }, spec: { replicas: 5 } });
      }
      await new Promise((r) => setTimeout(r, 3_000));
      const count = async (owner: string) =>
        (await client.list(ConfigMaps, { namespace: 'exp' })).items.filter(
          (cm) => cm.metadata.ownerReferences?.[0]?.name === owner,
        ).length;
      assert.equal(await count('with'), 5, 'exactly N children with expectations');
      assert.ok((await count('without')) > 5, 'the control shows the lagging cache would have caused duplicates');
    } finally {
      proxy.setMode({ kind: 'pass' });
      slow.close();
      await proxy.close();
    }
    void running;
  });

  test('409 Conflict is retried through the queue with fresh state, without error-level logs', async () => {
    await client.create(Namespaces, { metadata: { name: 'conf' } });
    const cache = new Cache({ client, namespace: 'conf' });
    const log = recordingLogger();
    const metrics = new Metrics({ processMetrics: false });
    let calls = 0;
    const c = new ControllerBuilder({ client, cache, log, metrics })
      .named('conflicts')
      .for(Widgets, generationChanged)
      .complete(async (req, ctx) => {
        calls += 1;
        const w = await ctx.cache.get(Widgets, req);
        if (!w) return done();
        if (calls === 1) {
          // another actor changes the object between our read and our write
          await ctx.rawClient.patch(Widgets, req, { metadata: { labels: { bumped: 'yes' } } });
        }
        const fresh: Widget = structuredClone(w);
        fresh.status = { phase: `seen-${w.metadata.generation}` };
        await ctx.rawClient.updateStatus(Widgets, fresh);
        return done();
      });
    const running = c.start(stopper());
    await client.create(Widgets, { metadata: { name: 'w', namespace: 'conf' }, spec: { replicas: 1 } });
    await waitFor(
      'the status to be written',
      async () => (await client.get(Widgets, { namespace: 'conf', name: 'w' })).status?.phase === 'seen-1',
    );
    assert.ok(calls >= 2, 'retried after the conflict');
    assert.ok(log.entries.some((e) => e.level === 'debug' && /conflict/.test(e.message)));
    assert.deepEqual(
      log.entries.filter((e) => e.level === 'error'),
      [],
      'no error-level log for a conflict',
    );
    const text = metrics.text();
    assert.match(text, /controller_runtime_reconcile_total\{controller="conflicts",result="error"\} 1/);
    assert.match(text, /workqueue_retries_total\{name="conflicts",controller="conflicts"\} 1/);
    void running;
  });

  test('errors are retried with backoff, TerminalError is not, requeueAfter comes back; one worker per key', async () => {
    await client.create(Namespaces, { metadata: { name: 'err' } });
    const cache = new Cache({ client, namespace: 'err' });
    const calls = new Map<string, number>();
    const inFlight = new Set<string>();
    let overlap = false;
    const c = new ControllerBuilder({ client, cache })
      .for(ConfigMaps)
      .withOptions({ maxConcurrentReconciles: 4 })
      .complete(async (req) => {
        const n = (calls.get(req.name) ?? 0) + 1;
        calls.set(req.name, n);
        if (inFlight.has(req.name)) overlap = true;
        inFlight.add(req.name);
        await new Promise((r) => setTimeout(r, 20));
        inFlight.delete(req.name);
        if (req.name === 'flaky' && n < 3) throw new Error('transient');
        if (req.name === 'terminal') throw new TerminalError('bad input');
        if (req.name === 'periodic' && n < 3) return requeueAfter(50);
        return done();
      });
    const running = c.start(stopper());
    for (const name of ['flaky', 'terminal', 'periodic', 'busy']) {
      await client.create(ConfigMaps, { metadata: { name, namespace: 'err' } });
    }
    for (let i = 0; i < 20; i++)
      await client.patch(ConfigMaps, { namespace: 'err', name: 'busy' }, { data: { i: String(i) } });
    await waitFor('flaky to succeed on the third try', async () => calls.get('flaky') === 3);
    await waitFor('periodic to be requeued twice', async () => calls.get('periodic') === 3);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(calls.get('terminal'), 1, 'a terminal error is not retried');
    assert.equal(calls.get('flaky'), 3);
    assert.equal(overlap, false, 'a key is never reconciled by two workers at once');
    assert.ok((calls.get('busy') ?? 0) < 21, 'changes during a reconcile collapse into one more reconcile');
    void running;
  });

  test('a controller stops cleanly: in-flight reconciles finish, start() resolves', async () => {
    await client.create(Namespaces, { metadata: { name: 'stop' } });
    const cache = new Cache({ client, namespace: 'stop' });
    let finished = 0;
    let started = false;
    const c = new ControllerBuilder({ client, cache }).for(ConfigMaps).complete(async (req) => {
      if (req.name !== 'x') return done(); // e.g. kube-root-ca.crt, which every namespace gets
      started = true;
      await new Promise((r) => setTimeout(r, 300));
      finished += 1;
      return done();
    });
    const ctl = new AbortController();
    const running = c.start(ctl.signal);
    await client.create(ConfigMaps, { metadata: { name: 'x', namespace: 'stop' } });
    await waitFor('the reconcile of x to start', async () => started);
    ctl.abort();
    await running;
    assert.equal(finished, 1, 'the in-flight reconcile finished before start() resolved');
    const err = await client.get(ConfigMaps, { namespace: 'stop', name: 'gone' }).catch((e: unknown) => e);
    assert.ok(isApiError(err, 'NotFound'));
  });
});
