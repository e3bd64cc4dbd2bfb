import assert from 'node:assert/strict';
import { test } from 'node:test';
import { uidShard } from '@opkit/runtime/sharding';
import { replicaOf } from './audit.ts';
import { type BodyEvent, slimEvent } from './audit-bodies.ts';
import { fenceCheck, fenceName, fenceTimeline, holdersAt, memberName, micros } from './fences.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const lease = (name: string, holder: string) => ({
  kind: 'Lease',
  metadata: { name },
  spec: { holderIdentity: holder },
});
const pod = (name: string, bucket: number) => ({
  kind: 'Pod',
  metadata: { name, namespace: 'chaos', uid: `uid-${name}`, labels: { 'opkit.dev/shard': String(bucket) } },
});

interface Spec {
  readonly by: string;
  readonly verb: string;
  readonly resource: string;
  readonly name: string;
  readonly s: number;
  readonly tookMs?: number;
  readonly code?: number;
  readonly res?: unknown;
  readonly req?: unknown;
  readonly subresource?: string;
}
function ev(x: Spec): BodyEvent {
  return {
    verb: x.verb,
    user: { username: 'system:serviceaccount:appservice-system:appservice-operator' },
    userAgent: `opkit/0.1.0 (appservice-operator; ${x.by})`,
    objectRef: {
      resource: x.resource,
      name: x.name,
      namespace: x.resource === 'leases' ? 'appservice-system' : 'chaos',
      ...(x.subresource ? { subresource: x.subresource } : {}),
    },
    responseStatus: { code: x.code ?? 200 },
    requestReceivedTimestamp: at(x.s),
    stageTimestamp: at(x.s + (x.tookMs ?? 5) / 1000),
    ...(x.res !== undefined ? { responseObject: x.res } : {}),
    ...(x.req !== undefined ? { requestObject: x.req } : {}),
  };
}
const member = (by: string, id: string, s: number, verb = 'update') =>
  ev({ by, verb, resource: 'leases', name: memberName(id), s, res: lease(memberName(id), id) });
const fence = (by: string, bucket: number, holder: string, s: number) =>
  ev({ by, verb: 'update', resource: 'leases', name: fenceName(bucket), s, res: lease(fenceName(bucket), holder) });
const podWrite = (by: string, verb: string, name: string, bucket: number, s: number, tookMs = 5) =>
  ev({ by, verb, resource: 'pods', name: verb === 'create' ? '' : name, s, tookMs, res: pod(name, bucket) });

/** An update of app-1's status by `by`, answered with `res`. */
const appStatus = (by: string, s: number, res: unknown) =>
  ev({ by, verb: 'update', resource: 'appservices', subresource: 'status', name: 'app-1', s, res });

/** chaos-a and chaos-b join; chaos-a takes buckets 3 and 4. */
const aHolds3And4 = (): BodyEvent[] => [
  member('chaos-a', 'chaos-a-abcde', 0, 'create'),
  member('chaos-b', 'chaos-b-fghij', 0, 'create'),
  fence('chaos-a', 3, 'chaos-a-abcde', 1),
  fence('chaos-a', 4, 'chaos-a-abcde', 1),
];

/** chaos-a holds bucket 3, writes, releases it; chaos-b acquires it and writes: one clean handoff. */
const cleanLog = (): BodyEvent[] => [
  member('chaos-a', 'chaos-a-abcde', 0, 'create'),
  member('chaos-b', 'chaos-b-fghij', 0.5, 'create'),
  fence('chaos-a', 3, 'chaos-a-abcde', 1),
  podWrite('chaos-a', 'create', 'app-1-x', 3, 2),
  appStatus('chaos-a', 3, {
    kind: 'AppService',
    metadata: { name: 'app-1', uid: 'uid-app-1', labels: { 'opkit.dev/shard': '3' } },
  }),
  ev({
    by: 'chaos-a',
    verb: 'create',
    resource: 'events',
    name: '',
    s: 4,
    req: { involvedObject: { kind: 'Pod', name: 'app-1-x', uid: 'uid-app-1-x' } },
  }),
  fence('chaos-a', 3, '', 5),
  fence('chaos-b', 3, 'chaos-b-fghij', 6),
  podWrite('chaos-b', 'delete', 'app-1-x', 3, 7),
  // failed writes and reads are not the fence's business
  { ...podWrite('chaos-a', 'delete', 'app-1-x', 3, 8.5), responseStatus: { code: 409 } },
  { ...podWrite('chaos-a', 'get', 'app-1-x', 3, 8.6) },
];

test('micros reads the audit log timestamps to the microsecond', () => {
  assert.equal(micros('2026-03-01T10:00:00.000001Z') - micros('2026-03-01T10:00:00Z'), 1);
  assert.equal(micros('2026-03-01T10:00:01.5Z') - micros('2026-03-01T10:00:00.000000Z'), 1_500_000);
  assert.ok(Number.isNaN(micros(undefined)));
});

test('fenceCheck: a clean log of one handoff has no violations', () => {
  const found = fenceCheck(cleanLog());
  assert.deepEqual(found.violations, []);
  assert.equal(found.checked, 4, 'pod create, AppService status, the Event about the pod, pod delete');
  assert.deepEqual(found.handoffs, { acquired: 2, released: 1, freed: 0, taken: 0 });
  const timeline = fenceTimeline(cleanLog());
  assert.equal(holdersAt(timeline, micros(at(5.5)))[3], '');
  assert.equal(holdersAt(timeline, micros(at(6.5)))[3], 'chaos-b-fghij');
});

test('fenceCheck: writes by a replica that does not hold the fence are violations, each named', () => {
  const log = [
    ...cleanLog(),
    podWrite('chaos-b', 'patch', 'app-1-x', 3, 5.5), // after the release, before chaos-b acquired
    podWrite('chaos-a', 'patch', 'app-1-x', 3, 6.5), // after chaos-b acquired
    podWrite('chaos-a', 'create', 'app-9-y', 9, 3), // bucket 9 never held
  ];
  const v = fenceCheck(log).violations;
  assert.deepEqual(
    v.map((x) => x.invariant),
    ['fence', 'fence', 'fence'],
  );
  assert.match(v[0]?.detail ?? '', /chaos-a create pods\/app-9-y \(bucket 9\).*no process had ever held/);
  assert.match(v[1]?.detail ?? '', /chaos-b patch pods\/app-1-x \(bucket 3\).*released/);
  assert.match(v[2]?.detail ?? '', /chaos-a patch pods\/app-1-x \(bucket 3\).*chaos-b-fghij held the bucket/);
});

test('fenceCheck: a write still in flight when its replica released the bucket is a violation', () => {
  const log = [...cleanLog(), podWrite('chaos-a', 'patch', 'app-1-x', 3, 4.9, 400)];
  const v = fenceCheck(log).violations;
  assert.equal(v.length, 1);
  assert.match(v[0]?.detail ?? '', /completed .* after the bucket passed to "" \(released\)/);
});

test('fenceCheck: a restarted replica may not write under the fence its previous process held', () => {
  const log = [
    member('chaos-a', 'chaos-a-abcde', 0, 'create'),
    fence('chaos-a', 3, 'chaos-a-abcde', 1),
    member('chaos-a', 'chaos-a-zzzzz', 9, 'create'), // the new process, started at 8
    podWrite('chaos-a', 'create', 'app-1-x', 3, 10),
  ];
  const starts = new Map([['chaos-a', [T0 - 1_000, T0 + 8_000]]]);
  const v = fenceCheck(log, { starts }).violations;
  assert.equal(v.length, 1);
  assert.match(v[0]?.detail ?? '', /held by chaos-a-abcde .*not by the writing process \(chaos-a-zzzzz\)/);
  // before the new process announced itself, it is no process that holds anything
  const early = [...log.slice(0, 2), podWrite('chaos-a', 'create', 'app-1-x', 3, 8.5)];
  assert.match(fenceCheck(early, { starts }).violations[0]?.detail ?? '', /one that had not joined yet/);
});

test('fenceCheck: a holder paused past its lease that writes once continued is a former holder still writing', () => {
  const log = [
    ...aHolds3And4(),
    member('chaos-a', 'chaos-a-abcde', 2), // its last renewal: then it is paused (SIGSTOP)
    member('chaos-b', 'chaos-b-fghij', 10),
    fence('chaos-b', 3, 'chaos-b-fghij', 18), // 16 s later: a takeover the lease allows
    fence('chaos-b', 4, '', 18), // freed: its holder judged dead
    podWrite('chaos-b', 'create', 'app-1-y', 3, 19),
    // continued (SIGCONT) at 22: an overdue reconcile writes before the timer that sees its Lease is stale
    podWrite('chaos-a', 'delete', 'app-1-x', 3, 22),
    podWrite('chaos-a', 'patch', 'app-2-x', 4, 22.1),
    member('chaos-a', 'chaos-a-abcde', 24), // it rejoins
  ];
  assert.deepEqual(
    fenceCheck(log).violations.map((x) => `${x.invariant}: ${x.detail}`),
    [
      'fence: chaos-a delete pods/app-1-x (bucket 3) received 2026-03-01T10:00:22.000Z: chaos-b-fghij held the bucket (since 2026-03-01T10:00:18.000Z); the writing process chaos-a-abcde had held it until 2026-03-01T10:00:18.000Z (chaos-b-fghij took it), 4.0 s before: a former holder still writing',
      'fence: chaos-a patch pods/app-2-x (bucket 4) received 2026-03-01T10:00:22.100Z: the bucket had been freed by chaos-b (since 2026-03-01T10:00:18.000Z) and nobody held it; the writing process chaos-a-abcde had held it until 2026-03-01T10:00:18.000Z (chaos-b freed it), 4.1 s before: a former holder still writing',
    ],
  );
  // the same process, had it not written before its Lease timer stopped it: clean
  assert.deepEqual(
    fenceCheck(log.filter((e) => !(replicaOf(e) === 'chaos-a' && e.objectRef?.resource === 'pods'))).violations,
    [],
  );
});

test('fenceCheck: a bucket taken from a holder sooner than the lease after its last renewal', () => {
  const log = [
    ...aHolds3And4(),
    member('chaos-a', 'chaos-a-abcde', 10),
    fence('chaos-b', 3, 'chaos-b-fghij', 20), // 10 s after chaos-a renewed: too soon
    fence('chaos-b', 4, 'chaos-b-fghij', 25.5), // 15.5 s after: allowed
  ];
  const found = fenceCheck(log);
  assert.deepEqual(
    found.violations.map((x) => x.invariant),
    ['membership'],
  );
  assert.match(found.violations[0]?.detail ?? '', /chaos-b-fghij took bucket 3 from chaos-a-abcde .*9\.99 s after/);
  assert.deepEqual(found.handoffs, { acquired: 4, released: 0, freed: 0, taken: 2 });
});

test("fenceCheck: a dead holder's fence freed by another member counts as a takeover, judged by the lease", () => {
  const log = [
    ...aHolds3And4(),
    member('chaos-a', 'chaos-a-abcde', 10),
    // chaos-b judges chaos-a dead (annotating its own member Lease is no renewal of chaos-a's) and frees the fences
    ev({
      by: 'chaos-b',
      verb: 'update',
      resource: 'leases',
      name: memberName('chaos-a-abcde'),
      s: 12,
      res: lease('x', 'y'),
    }),
    fence('chaos-b', 3, '', 20), // 10 s after chaos-a's own last renewal: too soon
    fence('chaos-b', 4, '', 25.5), // 15.5 s after: allowed
    member('chaos-a', 'chaos-a-zzzzz', 26, 'create'), // restarted under a new identity, it takes them at once
    fence('chaos-a', 3, 'chaos-a-zzzzz', 26.5),
    fence('chaos-a', 4, 'chaos-a-zzzzz', 26.5),
    fence('chaos-a', 4, '', 30), // and releases one itself
  ];
  const found = fenceCheck(log, { starts: new Map([['chaos-a', [T0 - 1_000, T0 + 25_000]]]) });
  assert.deepEqual(
    found.violations.map((x) => x.detail),
    [
      "chaos-b-fghij freed bucket 3 from chaos-a-abcde at 2026-03-01T10:00:20.000Z, 9.99 s after chaos-a-abcde's member Lease last changed",
    ],
  );
  assert.deepEqual(found.handoffs, { acquired: 4, released: 1, freed: 2, taken: 0 });
});

test('fenceCheck: without lease bodies the holder is inferred from who wrote the fence', () => {
  const bare = (by: string, s: number) => ev({ by, verb: 'update', resource: 'leases', name: fenceName(3), s });
  const log = [
    bare('chaos-a', 1), // acquires
    podWrite('chaos-a', 'create', 'app-1-x', 3, 2),
    podWrite('chaos-b', 'patch', 'app-1-x', 3, 3), // violation: chaos-a holds it
    bare('chaos-a', 4), // releases
    podWrite('chaos-a', 'patch', 'app-1-x', 3, 5), // violation: released
  ];
  const v = fenceCheck(log).violations;
  assert.equal(v.length, 2);
  assert.match(v[0]?.detail ?? '', /chaos-b .*chaos-a-\*{5} held the bucket/);
  assert.match(v[1]?.detail ?? '', /chaos-a .*released/);
});

test('fenceCheck: a write that no label ties to a bucket is reported, an Event about something else is not', () => {
  const log = [
    ev({ by: 'chaos-a', verb: 'update', resource: 'appservices', name: 'app-2', s: 1, res: { metadata: {} } }),
    ev({
      by: 'chaos-a',
      verb: 'create',
      resource: 'events',
      name: '',
      s: 2,
      req: { involvedObject: { kind: 'Node' } },
    }),
  ];
  const v = fenceCheck(log).violations;
  assert.deepEqual(
    v.map((x) => x.invariant),
    ['shard-label'],
  );
});

test('slimEvent keeps what fenceCheck reads: the same findings from a fraction of the bodies', () => {
  const fat = cleanLog().map((e) =>
    e.responseObject
      ? { ...e, responseObject: { ...(e.responseObject as object), status: { x: 'y'.repeat(1000) } } }
      : e,
  );
  const slim = fat.map(slimEvent);
  assert.deepEqual(fenceCheck(slim), fenceCheck(fat));
  assert.ok(JSON.stringify(slim).length < JSON.stringify(fat).length / 2);
  const released = slimEvent(fence('chaos-a', 3, '', 5));
  assert.deepEqual(released.responseObject, {
    kind: 'Lease',
    metadata: { name: fenceName(3) },
    spec: { holderIdentity: '' },
  });
});

test('server filter: an AppService write is tied to its uid hash’s bucket, a pod to its u-label; a wrong holder is caught', () => {
  const uid = 'a6c1b7a2-58f4-4d0e-9d3c-5f1f0e2a7b10';
  const b = uidShard(uid);
  const app = { kind: 'AppService', metadata: { name: 'app-1', uid } };
  const child = { kind: 'Pod', metadata: { name: 'app-1-x', uid: 'uid-x', labels: { 'opkit.dev/shard': `u${b}` } } };
  const log = [
    member('chaos-a', 'chaos-a-abcde', 0, 'create'),
    member('chaos-b', 'chaos-b-fghij', 0, 'create'),
    fence('chaos-a', b, 'chaos-a-abcde', 1),
    appStatus('chaos-a', 2, app),
    ev({ by: 'chaos-a', verb: 'create', resource: 'pods', name: '', s: 2.5, res: child }),
    // chaos-b never held the bucket: its write is a fence violation, not an untied one
    ev({ by: 'chaos-b', verb: 'update', resource: 'appservices', name: 'app-1', s: 3, res: app }),
  ];
  const found = fenceCheck(log, { filter: 'server' });
  assert.equal(found.checked, 3);
  assert.deepEqual(
    found.violations.map((v) => v.invariant),
    ['fence'],
  );
  assert.match(found.violations[0]?.detail ?? '', new RegExp(`chaos-b update appservices/app-1 \\(bucket ${b}\\)`));
  // under the labels filter the same log has nothing to tie the AppService writes to
  assert.deepEqual(
    fenceCheck(log).violations.map((v) => v.invariant),
    ['shard-label', 'shard-label', 'shard-label'],
  );
});
