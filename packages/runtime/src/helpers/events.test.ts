/**
 * The EventRecorder's decisions against a fake client and a fake clock: which API it writes, how repeats become a
 * series (and when a series ends), how writes fold together, and the per-object rate limit. What the apiserver
 * accepts is tested end to end in test/manager.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps, Pods } from '../client/builtins.ts';
import { ApiError } from '../client/errors.ts';
import type { InputOf, Kind, KubeObject, ObjectOf, ObjectRef } from '../client/resource.ts';
import type { APIResource } from '../client/types.ts';
import { type Logger, silentLogger } from '../logger.ts';
import { FakeClock } from '../workqueue/clock.ts';
import { type EventClient, EventRecorder, objectReference, SERIES_IDLE_MS } from './events.ts';

interface Call {
  readonly verb: 'create' | 'patch';
  readonly api: string;
  readonly name: string;
  readonly body: Record<string, unknown>;
}

/** Records writes; serves events.k8s.io/v1 or not; a patch of an Event it "expired" answers NotFound. */
class FakeClient implements EventClient {
  readonly calls: Call[] = [];
  /** Writes started (counted as they begin, before `hold`). */
  requests = 0;
  readonly expired = new Set<string>();
  discoveries = 0;
  /** Resolves held writes (to observe folding while a write is under way). */
  hold: Promise<void> | undefined;

  readonly served: boolean;

  constructor(served: boolean) {
    this.served = served;
  }

  async serverResources(apiVersion: string): Promise<APIResource[]> {
    this.discoveries += 1;
    assert.equal(apiVersion, 'events.k8s.io/v1');
    if (!this.served) throw new ApiError('NotFound', 'GET /apis/events.k8s.io/v1: not found', { status: 404 });
    return [{ name: 'events', kind: 'Event', namespaced: true }];
  }

  async create<R extends Kind<KubeObject, unknown>>(r: R, obj: InputOf<R>): Promise<ObjectOf<R>> {
    this.requests += 1;
    await this.hold;
    const name = obj.metadata.name ?? '';
    this.calls.push({ verb: 'create', api: r.apiVersion, name, body: obj as unknown as Record<string, unknown> });
    return obj as ObjectOf<R>;
  }

  async patch<T extends KubeObject>(r: Kind<T>, ref: ObjectRef, patch: unknown): Promise<T> {
    this.requests += 1;
    await this.hold;
    if (this.expired.has(ref.name)) throw new ApiError('NotFound', `events "${ref.name}" not found`, { status: 404 });
    this.calls.push({ verb: 'patch', api: r.apiVersion, name: ref.name, body: patch as Record<string, unknown> });
    return { metadata: { ...ref } } as T;
  }
}

const pod = { metadata: { name: 'web-1', namespace: 'ns', uid: 'uid-pod', resourceVersion: '7' } };
const cm = { metadata: { name: 'cfg', namespace: 'ns', uid: 'uid-cm' } };
/** The references the recorder must write for `pod` and `cm`. */
const POD_REF = { apiVersion: 'v1', kind: 'Pod', name: 'web-1', namespace: 'ns', uid: 'uid-pod', resourceVersion: '7' };
const CM_REF = { apiVersion: 'v1', kind: 'ConfigMap', name: 'cfg', namespace: 'ns', uid: 'uid-cm' };

function recorder(client: FakeClient, clock = new FakeClock(1_700_000_000_000), extra: { burst?: number } = {}) {
  return new EventRecorder({
    client,
    component: 'appservice',
    instance: 'appservice-host',
    log: silentLogger,
    clock,
    ...extra,
  });
}

test('events.k8s.io/v1: regarding, related, action, reportingController/Instance, a MicroTime eventTime', async () => {
  const client = new FakeClient(true);
  const rec = recorder(client);
  rec.event(Pods, pod, 'Normal', 'Scheduled', 'pod placed', {
    action: 'Bind',
    related: objectReference(ConfigMaps, cm),
  });
  await rec.flush();
  assert.equal(client.calls.length, 1);
  const [create] = client.calls;
  assert.equal(create?.api, 'events.k8s.io/v1');
  assert.match(create?.name ?? '', /^web-1\.[0-9a-f]{16}$/);
  assert.deepEqual(
    { ...create?.body, metadata: undefined },
    {
      metadata: undefined,
      eventTime: '2023-11-14T22:13:20.000000Z',
      reportingController: 'appservice',
      reportingInstance: 'appservice-host',
      action: 'Bind',
      reason: 'Scheduled',
      regarding: POD_REF,
      related: CM_REF,
      note: 'pod placed',
      type: 'Normal',
    },
  );
  assert.equal(client.discoveries, 1);
  rec.event(Pods, pod, 'Normal', 'Other', 'x');
  await rec.flush();
  assert.equal(client.discoveries, 1, 'discovery is asked once');
  assert.equal(client.calls[1]?.body.action, 'NoneSpecified', "client-go's default action");
});

test('repeats become a series, keyed as client-go keys them: another note or type joins it, another object or action does not', async () => {
  const client = new FakeClient(true);
  const clock = new FakeClock(1_700_000_000_000);
  const rec = recorder(client, clock);
  for (let i = 0; i < 3; i++) {
    rec.event(Pods, pod, 'Warning', 'BackOff', 'restarting');
    await rec.flush();
    clock.advance(1_000);
  }
  rec.event(Pods, pod, 'Normal', 'BackOff', 'restarting again'); // client-go's key has neither the note nor the type
  await rec.flush();
  rec.event(Pods, { metadata: { ...pod.metadata, resourceVersion: '8' } }, 'Warning', 'BackOff', 'restarting');
  await rec.flush(); // the regarding reference differs (its resourceVersion): another series, as in client-go
  rec.event(Pods, pod, 'Warning', 'BackOff', 'restarting', { action: 'Restart' });
  await rec.flush();
  assert.deepEqual(
    client.calls.map((c) => [c.verb, c.body.series]),
    [
      ['create', undefined],
      ['patch', { count: 2, lastObservedTime: '2023-11-14T22:13:21.000000Z' }],
      ['patch', { count: 3, lastObservedTime: '2023-11-14T22:13:22.000000Z' }],
      ['patch', { count: 4, lastObservedTime: '2023-11-14T22:13:23.000000Z' }],
      ['create', undefined],
      ['create', undefined],
    ],
  );
  assert.equal(client.calls[1]?.name, client.calls[0]?.name, 'the series patches the Event it created');
  assert.equal(client.calls[0]?.body.note, 'restarting', 'the Event keeps its first note');
});

test('an install whose RBAC lacks events.k8s.io: the first refusal is a warning naming the rule, later ones debug', async () => {
  const client = new FakeClient(true);
  client.create = async () => {
    throw new ApiError(
      'Forbidden',
      'events.events.k8s.io is forbidden: User "system:serviceaccount:ns:op" cannot create',
      {
        status: 403,
      },
    );
  };
  const lines: { level: string; msg: string }[] = [];
  const log = {
    warn: (_o: unknown, msg: string) => lines.push({ level: 'warn', msg }),
    debug: (_o: unknown, msg: string) => lines.push({ level: 'debug', msg }),
    info: (_o: unknown, msg: string) => lines.push({ level: 'info', msg }),
  };
  const rec = new EventRecorder({ client, component: 'op', instance: 'op-1', log: log as unknown as Logger });
  rec.event(Pods, pod, 'Normal', 'Created', 'one');
  await rec.flush();
  rec.event(Pods, pod, 'Normal', 'Deleted', 'two');
  await rec.flush();
  assert.deepEqual(
    lines.map((l) => l.level),
    ['warn', 'debug'],
  );
  assert.match(lines[0]?.msg ?? '', /lacks create and patch on events\.k8s\.io events — regenerate and apply its RBAC/);
});

test('a series ends after 6 quiet minutes; an expired Event is created again with the count so far', async () => {
  const client = new FakeClient(true);
  const clock = new FakeClock(1_700_000_000_000);
  const rec = recorder(client, clock);
  rec.event(Pods, pod, 'Normal', 'Synced', 'ok');
  await rec.flush();
  clock.advance(SERIES_IDLE_MS + 1);
  rec.event(Pods, pod, 'Normal', 'Synced', 'ok');
  await rec.flush();
  assert.deepEqual(
    client.calls.map((c) => c.verb),
    ['create', 'create'],
  );
  assert.notEqual(client.calls[0]?.name, client.calls[1]?.name);
  client.expired.add(client.calls[1]?.name ?? '');
  clock.advance(1_000);
  rec.event(Pods, pod, 'Normal', 'Synced', 'ok');
  await rec.flush();
  const recreated = client.calls[2];
  assert.equal(recreated?.verb, 'create');
  assert.deepEqual(recreated?.body.series, { count: 2, lastObservedTime: '2023-11-14T22:19:21.001000Z' });
});

test('repeats recorded while a write is under way fold into one patch', async () => {
  const client = new FakeClient(true);
  const rec = recorder(client);
  let release = () => {};
  client.hold = new Promise((resolve) => {
    release = resolve;
  });
  for (let i = 0; i < 5; i++) rec.event(Pods, pod, 'Warning', 'Failed', 'quota exceeded');
  release();
  await rec.flush();
  assert.deepEqual(
    client.calls.map((c) => c.verb),
    ['create'],
    'the create already carries the five',
  );
  assert.deepEqual((client.calls[0]?.body.series as { count: number } | undefined)?.count, 5);
});

test('fallback: without events.k8s.io/v1, core/v1 Events with count, action, related and reportingComponent', async () => {
  const client = new FakeClient(false);
  const clock = new FakeClock(1_700_000_000_000);
  const rec = recorder(client, clock);
  rec.event(Pods, pod, 'Warning', 'Failed', 'quota exceeded', {
    action: 'Create',
    related: objectReference(ConfigMaps, cm),
  });
  await rec.flush();
  clock.advance(2_000);
  rec.event(Pods, pod, 'Warning', 'Failed', 'quota exceeded', {
    action: 'Create',
    related: objectReference(ConfigMaps, cm),
  });
  await rec.flush();
  const [create, patch] = client.calls;
  assert.equal(create?.api, 'v1');
  assert.deepEqual(
    { ...create?.body, metadata: undefined, source: undefined },
    {
      metadata: undefined,
      source: undefined,
      involvedObject: POD_REF,
      related: CM_REF,
      type: 'Warning',
      reason: 'Failed',
      action: 'Create',
      message: 'quota exceeded',
      reportingComponent: 'appservice',
      reportingInstance: 'appservice-host',
      firstTimestamp: '2023-11-14T22:13:20Z',
      lastTimestamp: '2023-11-14T22:13:20Z',
      count: 1,
    },
  );
  assert.equal(patch?.api, 'v1');
  assert.deepEqual(patch?.body, { count: 2, lastTimestamp: '2023-11-14T22:13:22Z' });
});

test('rate limit per regarding object: a burst, then one per refill interval; other objects are unaffected', async () => {
  const client = new FakeClient(true);
  const clock = new FakeClock(1_700_000_000_000);
  const rec = recorder(client, clock, { burst: 3 });
  for (let i = 0; i < 10; i++) rec.event(Pods, pod, 'Warning', `Flood${i}`, `message ${i}`);
  rec.event(ConfigMaps, cm, 'Normal', 'Other', 'another object');
  await rec.flush();
  assert.equal(rec.dropped, 7);
  assert.equal(client.calls.length, 4);
  clock.advance(300_000); // one refill
  rec.event(Pods, pod, 'Warning', 'Again', 'after the refill');
  rec.event(Pods, pod, 'Warning', 'Again2', 'over the limit');
  await rec.flush();
  assert.equal(rec.dropped, 8);
});

test('a note over 1 kB is cut to the limit, never through a character', async () => {
  const client = new FakeClient(true);
  const rec = recorder(client);
  rec.event(Pods, pod, 'Warning', 'Long', '€'.repeat(600));
  await rec.flush();
  const note = String(client.calls[0]?.body.note);
  assert.ok(Buffer.byteLength(note) <= 1024, `${Buffer.byteLength(note)} bytes`);
  assert.match(note, /^€+\.\.\.$/);
});

/** Lets the fake client's writes and the recorder's follow-ups run (no fake time passes). */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

for (const served of [true, false])
  test(`100 occurrences end as a count of 100 (${served ? 'events.k8s.io/v1' : 'core/v1'}): the rate limit holds writes back, never repeats`, async () => {
    const client = new FakeClient(served);
    const clock = new FakeClock(1_700_000_000_000);
    const rec = new EventRecorder({
      client,
      component: 'appservice',
      instance: 'appservice-host',
      log: silentLogger,
      clock,
    });
    const count = (c: Call | undefined) =>
      served ? (c?.body.series as { count: number } | undefined)?.count : (c?.body.count as number | undefined);
    for (let i = 0; i < 100; i++) {
      rec.event(Pods, pod, 'Warning', 'BackOff', 'restarting');
      await settle(); // each occurrence is its own write while the burst lasts
      clock.advance(10);
    }
    assert.equal(rec.dropped, 0, 'no occurrence of the series is dropped');
    assert.equal(client.calls.length, 25, 'the burst of 25 writes: one create and 24 patches');
    assert.equal(count(client.calls.at(-1)), 25);
    clock.advance(300_000); // the next token: the counts held back are written in one patch
    await settle();
    assert.equal(client.calls.length, 26);
    assert.equal(client.calls.at(-1)?.verb, 'patch');
    assert.equal(count(client.calls.at(-1)), 100);
    assert.equal(client.calls.at(-1)?.name, client.calls[0]?.name, 'the same Event');
    assert.equal(clock.pendingTimers(), 0, 'nothing more to write, no timer left');
    await rec.flush();
    assert.equal(client.calls.length, 26);
  });

test('held-back counts: other series of the object wait their turn, flush writes them at once, a new event over the limit is dropped', async () => {
  const client = new FakeClient(true);
  const clock = new FakeClock(1_700_000_000_000);
  const rec = new EventRecorder({ client, component: 'op', instance: 'op-1', log: silentLogger, clock, burst: 2 });
  const counts = () =>
    client.calls.map(
      (c) => `${c.body.reason ?? c.name}:${(c.body.series as { count: number } | undefined)?.count ?? 1}`,
    );
  rec.event(Pods, pod, 'Warning', 'A', 'a');
  rec.event(Pods, pod, 'Warning', 'B', 'b');
  await settle();
  assert.deepEqual(counts(), ['A:1', 'B:1'], 'the burst of 2 created both');
  const [a, b] = [client.calls[0]?.name, client.calls[1]?.name];
  rec.event(Pods, pod, 'Warning', 'C', 'c'); // a new Event with no token left: dropped, as client-go's spam filter does
  assert.equal(rec.dropped, 1);
  for (let i = 0; i < 3; i++) rec.event(Pods, pod, 'Warning', 'A', 'a');
  for (let i = 0; i < 4; i++) rec.event(Pods, pod, 'Warning', 'B', 'b');
  await settle();
  assert.equal(client.calls.length, 2, 'both repeats are held back');
  clock.advance(300_000); // one token: A, held first, is written
  await settle();
  assert.deepEqual(
    client.calls.slice(2).map((c) => [c.name, (c.body.series as { count: number }).count]),
    [[a, 4]],
  );
  rec.event(Pods, pod, 'Warning', 'B', 'b');
  assert.equal(await rec.flush(), 0);
  assert.deepEqual(
    client.calls.slice(3).map((c) => [c.name, (c.body.series as { count: number }).count]),
    [[b, 6]],
    'flush writes what the limit held back',
  );
  assert.equal(clock.pendingTimers(), 0);
  assert.equal(rec.dropped, 1);
});

test('flush(0) stops acting: the counts held back stay unwritten, no request is started', async () => {
  const client = new FakeClient(true);
  const rec = new EventRecorder({
    client,
    component: 'op',
    instance: 'op-1',
    log: silentLogger,
    clock: new FakeClock(1_700_000_000_000),
    burst: 1,
  });
  rec.event(Pods, pod, 'Warning', 'BackOff', 'restarting');
  await settle();
  assert.equal(client.calls.length, 1, 'the create took the only token');
  rec.event(Pods, pod, 'Warning', 'BackOff', 'restarting');
  await settle();
  assert.equal(client.calls.length, 1, 'the repeat is held back');
  assert.equal(await rec.flush(0), 0, 'nothing was under way');
  await settle();
  assert.equal(client.requests, 1, 'flush(0) started no write');
  assert.equal(await rec.flush(), 0, 'a flush with time writes what was held back');
  assert.equal(client.requests, 2);
});

test('held series: the timer is armed for the earliest token, whichever series was held first', async () => {
  const client = new FakeClient(true);
  const clock = new FakeClock(0);
  const rec = new EventRecorder({
    client,
    component: 'op',
    instance: 'op-1',
    log: silentLogger,
    clock,
    burst: 1,
    refillMs: 1_000,
  });
  const x = { metadata: { name: 'x', namespace: 'ns', uid: 'uid-x' } };
  const y = { metadata: { name: 'y', namespace: 'ns', uid: 'uid-y' } };
  rec.event(ConfigMaps, y, 'Normal', 'Synced', 'y'); // y's token is spent at 0: the next at 1000
  await settle();
  clock.advance(500);
  rec.event(ConfigMaps, x, 'Normal', 'Synced', 'x'); // x's at 500: the next at 1500
  await settle();
  rec.event(ConfigMaps, x, 'Normal', 'Synced', 'x');
  await settle();
  assert.equal(clock.pendingTimers(), 1, 'x is held: a timer for 1500');
  clock.advance(100);
  rec.event(ConfigMaps, y, 'Normal', 'Synced', 'y'); // held second, but its token comes first
  await settle();
  assert.equal(clock.pendingTimers(), 1, 'one timer, moved to 1000');
  assert.equal(client.calls.length, 2);
  clock.advance(400); // 1000
  await settle();
  assert.deepEqual(
    client.calls.slice(2).map((c) => c.name.split('.')[0]),
    ['y'],
    "y is written at its token's time",
  );
  clock.advance(499);
  await settle();
  assert.equal(client.calls.length, 3, 'x waits for its own');
  clock.advance(1); // 1500
  await settle();
  assert.deepEqual(
    client.calls.slice(3).map((c) => c.name.split('.')[0]),
    ['x'],
  );
  assert.equal(clock.pendingTimers(), 0);
});

test('holding a series costs the same however many are held: no rescan of the held series per hold', async () => {
  // every look at a bucket's timing reads options.refillMs: count those reads while n series are held one by one
  let reads = 0;
  const options = {
    client: new FakeClient(true),
    component: 'op',
    instance: 'op-1',
    log: silentLogger,
    clock: new FakeClock(0),
    burst: 1,
    get refillMs() {
      reads += 1;
      return 60_000;
    },
  };
  const rec = new EventRecorder(options);
  const n = 400;
  const objects = Array.from({ length: n }, (_, i) => ({ metadata: { name: `o${i}`, namespace: 'ns', uid: `u${i}` } }));
  for (const o of objects) rec.event(ConfigMaps, o, 'Normal', 'Synced', 'first');
  await settle();
  assert.equal(options.client.calls.length, n, 'one create per object: each spent its token');
  reads = 0;
  for (const o of objects) rec.event(ConfigMaps, o, 'Normal', 'Synced', 'again');
  await settle();
  assert.equal(options.client.calls.length, n, 'every repeat is held back');
  // each hold takes (one read) and times its own token (one read); a rescan per hold would be n²/2 = 80,000 reads
  assert.ok(reads <= 4 * n, `${reads} reads of the bucket timing for ${n} holds`);
  assert.equal(options.clock.pendingTimers(), 1);
  assert.equal(await rec.flush(), 0);
  assert.equal(options.client.calls.length, 2 * n, 'a flush writes every held count');
});
