/**
 * A watch's mapper lane with a fake clock and a fake cache: sync answers enqueue at once, async ones when they
 * resolve; throws, rejections and timeouts are logged and counted and never stop the lane; one object's mappings run
 * one at a time, coalesced; the lane's concurrency bounds the calls in flight. `referencing` and `byIndex` ask the
 * cache the expected query; their paths are typed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CacheListOptions } from '../cache/cache.ts';
import { fieldIndex } from '../cache/indexes.ts';
import { ConfigMaps, type Pod, Pods } from '../client/builtins.ts';
import { type Kind, type KubeObject, resource } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { Metrics } from '../metrics.ts';
import { FakeClock } from '../workqueue/index.ts';
import type { CacheReader, MapContext, MapFunc } from './handlers.ts';
import { MapRunner } from './mapping.ts';
import type { ReconcileRequest } from './reconcile.ts';
import { byIndex, referencing } from './references.ts';

/** Lets promise callbacks run (no fake time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** A reader that records each list query and answers `answer`'s objects. */
function fakeCache(answer: () => readonly KubeObject[] = () => []) {
  const queries: { kind: string; index?: string; value?: string; namespace?: string }[] = [];
  const reader: CacheReader = {
    get: async () => undefined,
    list: async <T extends KubeObject>(r: Kind<T>, o: CacheListOptions<T> = {}): Promise<T[]> => {
      const q = o.index && 'index' in o.index ? { index: o.index.index.name, value: o.index.value } : {};
      queries.push({ kind: r.kind, ...q, ...(o.namespace ? { namespace: o.namespace } : {}) });
      return answer().filter((x): x is T => x.kind === r.kind);
    },
  };
  return { reader, queries };
}

function errorsLogged(): { log: Logger; errors: string[] } {
  const errors: string[] = [];
  const log: Logger = {
    ...silentLogger,
    error: (fields) => errors.push(String(fields.err)),
    child: () => log,
  };
  return { log, errors };
}

const cm = (name: string, rv = '1'): KubeObject => ({
  kind: 'ConfigMap',
  metadata: { namespace: 'ns', name, uid: `u-${name}`, resourceVersion: rv },
});

function lane(map: MapFunc<KubeObject>, o: { concurrency?: number; timeoutMs?: number } = {}) {
  const clock = new FakeClock(0);
  const metrics = new Metrics({ processMetrics: false });
  const enqueued: string[] = [];
  const { log, errors } = errorsLogged();
  const runner = new MapRunner<KubeObject>({
    controller: 'c',
    kind: 'ConfigMap',
    map,
    enqueue: (r: ReconcileRequest, priority: number) => enqueued.push(`${r.name}@${priority}`),
    cache: fakeCache().reader,
    log,
    metrics,
    clock,
    concurrency: o.concurrency,
    timeoutMs: o.timeoutMs,
  });
  const count = () =>
    /opkit_controller_mapper_errors_total\{controller="c",kind="ConfigMap"\} (\d+)/.exec(
      metrics.registry.metrics(),
    )?.[1];
  return { runner, clock, enqueued, errors, count };
}

/** A mapper whose calls wait until released: `calls` records each call's object names. */
function held() {
  const calls: string[][] = [];
  const releases: (() => void)[] = [];
  const signals: AbortSignal[] = [];
  const map: MapFunc<KubeObject> = (obj, ctx) => {
    calls.push([`${obj.metadata.name}@${obj.metadata.resourceVersion}`]);
    signals.push(ctx.signal);
    return new Promise((resolve) =>
      releases.push(() => resolve([{ namespace: 'ns', name: `for-${obj.metadata.name}` }])),
    );
  };
  return { map, calls, releases, signals };
}

test('a synchronous mapper enqueues within the event; an async one when it resolves, with the context', async () => {
  const sync = lane((obj) => [{ namespace: 'ns', name: `s-${obj.metadata.name}` }]);
  sync.runner.submit([cm('a')], -100);
  assert.deepEqual(sync.enqueued, ['s-a@-100']);
  assert.equal(sync.runner.inFlight, 0);

  let seen: MapContext | undefined;
  const async = lane(async (obj, ctx) => {
    seen = ctx;
    await Promise.resolve();
    return [{ namespace: 'ns', name: `a-${obj.metadata.name}` }];
  });
  async.runner.submit([cm('a', '1'), cm('a', '2')], 0);
  assert.deepEqual(async.enqueued, []);
  assert.equal(async.runner.inFlight, 1);
  await settle();
  assert.deepEqual(async.enqueued, ['a-a@0', 'a-a@0']);
  assert.equal(async.runner.inFlight, 0);
  assert.ok(seen?.cache && seen.log && seen.signal && !seen.signal.aborted);
  assert.equal(async.count(), '0');
});

test('a throw or a rejection is logged and counted; the other objects and later events still map', async () => {
  const l = lane(async (obj) => {
    if (obj.metadata.name === 'bad') throw new Error('boom');
    return [{ namespace: 'ns', name: `for-${obj.metadata.name}` }];
  });
  l.runner.submit([cm('bad')], 0);
  l.runner.submit([cm('good')], 0);
  await settle();
  const s = lane((obj) => {
    if (obj.metadata.resourceVersion === '1') throw new Error('sync boom');
    return [{ name: 'ok' }];
  });
  s.runner.submit([cm('x', '1'), cm('x', '2')], 0);
  assert.deepEqual(l.enqueued, ['for-good@0']);
  assert.deepEqual(l.errors, ['boom']);
  assert.equal(l.count(), '1');
  assert.deepEqual(s.enqueued, ['ok@0']);
  assert.deepEqual(s.errors, ['sync boom']);
  assert.equal(s.count(), '1');
});

test('an async answer that is not a list is a failure like a throw: logged, counted, the object maps again', async () => {
  let answer: unknown;
  const l = lane(async () => answer as readonly ReconcileRequest[]); // JavaScript, or a cast, can answer anything
  l.runner.submit([cm('a', '1')], 0);
  await settle();
  assert.equal(l.count(), '1');
  assert.equal(l.errors.length, 1);
  assert.equal(l.runner.inFlight, 0); // the slot is free: the next change of the same object maps
  answer = [{ namespace: 'ns', name: 'x' }];
  l.runner.submit([cm('a', '2')], 0);
  await settle();
  assert.deepEqual(l.enqueued, ['x@0']);
});

test('mapperConcurrency and mapperTimeoutMs out of range are refused, naming the option', () => {
  for (const o of [
    { concurrency: 0 },
    { concurrency: Number.NaN },
    { concurrency: 1.5 },
    { timeoutMs: 0 },
    { timeoutMs: Number.NaN },
  ])
    assert.throws(
      () => lane(async () => [], o),
      (err: unknown) =>
        err instanceof UsageError &&
        err.code === 'InvalidArgument' &&
        /^mapper(Concurrency|TimeoutMs): /.test(err.message),
    );
});

test('one object maps one call at a time; its changes meanwhile coalesce into one call with each state', async () => {
  const h = held();
  const l = lane(h.map);
  l.runner.submit([cm('a', '1')], 0);
  l.runner.submit([cm('a', '1'), cm('a', '2')], 0); // an update: old and new
  l.runner.submit([cm('a', '2'), cm('a', '3')], -100);
  assert.equal(h.calls.length, 1);
  assert.equal(l.runner.waiting, 1);
  h.releases.shift()?.();
  await settle();
  // the waiting states (1, 2, 3: deduplicated) mapped by the next call, at the highest priority they came with
  assert.deepEqual(h.calls.slice(1), [['a@1'], ['a@2'], ['a@3']]);
  for (const r of h.releases.splice(0)) r();
  await settle();
  assert.deepEqual(l.enqueued, ['for-a@0', 'for-a@0', 'for-a@0', 'for-a@0']);
  assert.equal(l.runner.waiting, 0);
});

test('the lane runs at most `concurrency` calls; the others wait in arrival order', async () => {
  const h = held();
  const l = lane(h.map, { concurrency: 2 });
  for (const name of ['a', 'b', 'c', 'd']) l.runner.submit([cm(name)], 0);
  assert.deepEqual(h.calls, [['a@1'], ['b@1']]);
  assert.equal(l.runner.waiting, 2);
  h.releases[1]?.(); // b answers first: c starts
  await settle();
  assert.deepEqual(
    h.calls.map(([c]) => c),
    ['a@1', 'b@1', 'c@1'],
  );
  assert.deepEqual(l.enqueued, ['for-b@0']);
});

test('a call that outlasts the timeout is given up: signal aborted, logged, counted, slot freed, late answer dropped', async () => {
  const h = held();
  const l = lane(h.map, { concurrency: 1, timeoutMs: 5_000 });
  l.runner.submit([cm('slow')], 0);
  l.runner.submit([cm('next')], 0);
  l.clock.advance(4_999);
  await settle();
  assert.equal(h.calls.length, 1);
  l.clock.advance(1);
  await settle();
  assert.equal(h.signals[0]?.aborted, true);
  assert.equal(l.count(), '1');
  assert.match(l.errors[0] ?? '', /longer than 5000 ms/);
  assert.deepEqual(
    h.calls.map(([c]) => c),
    ['slow@1', 'next@1'],
  );
  h.releases[0]?.(); // the slow one answers late
  h.releases[1]?.();
  await settle();
  assert.deepEqual(l.enqueued, ['for-next@0']);
});

test('stop aborts the calls in flight and drops what waits, without counting errors', async () => {
  const h = held();
  const l = lane(h.map, { concurrency: 1 });
  l.runner.submit([cm('a')], 0);
  l.runner.submit([cm('b')], 0);
  l.runner.stop();
  await settle();
  assert.equal(h.signals[0]?.aborted, true);
  assert.equal(l.runner.waiting, 0);
  assert.equal(h.calls.length, 1);
  assert.equal(l.count(), '0');
  l.runner.submit([cm('c')], 0);
  assert.equal(h.calls.length, 1);
});

test('referencing: Bs of the A’s namespace by name; all namespaces for a cluster-scoped A or by key', async () => {
  const pod: Pod = { kind: 'Pod', metadata: { namespace: 'ns', name: 'p1' } };
  const { reader, queries } = fakeCache(() => [pod]);
  const ctx: MapContext = { cache: reader, log: silentLogger, signal: new AbortController().signal };
  const a = { kind: 'ConfigMap', metadata: { namespace: 'ns', name: 'cfg' } };
  assert.deepEqual(await referencing(Pods, 'spec.serviceAccountName')(a, ctx), [{ namespace: 'ns', name: 'p1' }]);
  await referencing(Pods, 'spec.nodeName')({ kind: 'Node', metadata: { name: 'node-1' } }, ctx);
  await byIndex(fieldIndex(Pods, 'spec.hostname'), { by: 'key' })(a, ctx);
  assert.deepEqual(await referencing(Pods, 'spec.hostname')({ metadata: {} }, ctx), []);
  assert.deepEqual(queries, [
    { kind: 'Pod', index: 'spec.serviceAccountName', value: 'cfg', namespace: 'ns' },
    { kind: 'Pod', index: 'spec.nodeName', value: 'node-1' },
    { kind: 'Pod', index: 'spec.hostname', value: 'ns/cfg' },
  ]);
  assert.equal(fieldIndex(Pods, 'spec.nodeName'), fieldIndex(Pods, 'spec.nodeName'), 'one handle per kind and path');
});

interface Snapshot extends KubeObject {
  spec: { storeName: string };
}
interface Store extends KubeObject {
  spec: { replicas: number };
}
const Snapshots = resource<Snapshot>({
  group: 'x.io',
  version: 'v1',
  kind: 'Snapshot',
  plural: 'snapshots',
  namespaced: true,
});
const Stores = resource<Store>({ group: 'x.io', version: 'v1', kind: 'Store', plural: 'stores', namespaced: true });

/** Never called: only type-checked. */
export function typing(cache: CacheReader): void {
  // @ts-expect-error not a path of a Pod
  referencing(Pods, 'spec.nodeNme');
  // @ts-expect-error a path to an object, not to a string
  fieldIndex(Pods, 'spec.securityContext');
  // @ts-expect-error an index of Snapshots does not read Stores (built-in kinds, all fields optional, are alike)
  void cache.list(Stores, { index: fieldIndex(Snapshots, 'spec.storeName').is('x') });
  void cache.list(Snapshots, { index: fieldIndex(Snapshots, 'spec.storeName').is('x') });
  // @ts-expect-error not a built-in index
  void cache.list(Pods, { index: { name: 'controler', value: 'x' } });
  // these type-check
  fieldIndex(Pods, 'spec.nodeName').name satisfies 'spec.nodeName';
  // @ts-expect-error a map's key may hold dots (app.kubernetes.io/name): a label is indexed with defineIndex
  fieldIndex(Pods, 'metadata.labels.app');
  fieldIndex(ConfigMaps, 'metadata.finalizers');
  void cache.list(Pods, { namespace: 'ns', index: fieldIndex(Pods, 'spec.nodeName').is('node-1') });
}
