import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '@opkit/testenv';
import { type LeaseView, splitBrain, writeTimeline } from './audit.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

/** An audit event of the operator's replica `by` at `s` seconds (received then, completed 5 ms later). */
function ev(by: string, verb: string, resource: string, s: number, code = 200): AuditEvent {
  return {
    verb,
    user: { username: 'system:serviceaccount:appservice-system:appservice-operator' },
    userAgent: `opkit/0.1.0 (appservice-operator; ${by})`,
    objectRef: { resource, name: resource === 'leases' ? 'appservice-operator-leader' : 'app-1-x', namespace: 'chaos' },
    responseStatus: { code },
    requestReceivedTimestamp: at(s),
    stageTimestamp: at(s + 0.005),
  };
}

/**
 * chaos-a leads and writes; it is paused at 10 s (its renewals stop); chaos-b, standing by (its attempts until then
 * refused), takes the Lease at 25 s and writes; chaos-a's restarted process stands by.
 */
const pauseLog = (): AuditEvent[] => [
  ev('chaos-a', 'update', 'leases', 0),
  ev('chaos-a', 'create', 'pods', 1),
  ev('chaos-b', 'update', 'leases', 2, 409), // a standby's attempt, refused: no change of holder
  ev('chaos-a', 'update', 'leases', 8),
  ev('chaos-a', 'delete', 'pods', 9),
  ev('chaos-b', 'update', 'leases', 25), // the takeover
  ev('chaos-b', 'create', 'pods', 26),
  ev('chaos-b', 'get', 'pods', 26.5),
];

test('splitBrain: reads, refused writes and the new leader after its takeover are no split brain', () => {
  assert.deepEqual(splitBrain(pauseLog()), []);
  // a write received before the takeover completed, logged after it (the log is in order of completion)
  assert.deepEqual(
    splitBrain([...pauseLog().slice(0, 6), ev('chaos-a', 'patch', 'pods', 25.001), ...pauseLog().slice(6)]),
    [],
  );
});

test('splitBrain: a former leader writing after its Lease was taken is a violation that names it', () => {
  const log = [
    ...pauseLog(),
    ev('chaos-a', 'create', 'pods', 27.5), // continued after the pause: an overdue reconcile writes
    ev('chaos-a', 'update', 'leases', 27.6, 409), // its renewal is refused: it holds nothing
    ev('chaos-a', 'update', 'appservices', 27.7, 409), // a refused write changes nothing
    ev('chaos-a', 'create', 'events', 27.8),
  ];
  assert.deepEqual(splitBrain(log), [
    'chaos-a create pods/app-1-x at 2026-03-01T10:00:27.500Z, 2.5 s after chaos-b took the Lease from it (at 2026-03-01T10:00:25.005Z): a former leader still writing',
    'chaos-a create events/app-1-x at 2026-03-01T10:00:27.800Z, 2.8 s after chaos-b took the Lease from it (at 2026-03-01T10:00:25.005Z): a former leader still writing',
  ]);
});

test('splitBrain: the view carries the holder across slices of the log, and a Lease taken back ends the other side', () => {
  const view: LeaseView = { holder: undefined, since: 0 };
  assert.deepEqual(splitBrain(pauseLog(), view), []);
  assert.deepEqual(
    { holder: view.holder, from: view.from, since: new Date(view.since).toISOString() },
    { holder: 'chaos-b', from: 'chaos-a', since: '2026-03-01T10:00:25.005Z' },
  );
  const next = [
    ev('chaos-a', 'delete', 'pods', 30), // in the next slice: still caught
    ev('chaos-a', 'update', 'leases', 60), // chaos-a leads again (chaos-b lost it in turn)
    ev('chaos-a', 'create', 'pods', 61),
    ev('chaos-b', 'patch', 'pods', 62),
    ev('chaos-c', 'create', 'pods', 63), // a replica that never held it
  ];
  assert.deepEqual(splitBrain(next, view), [
    'chaos-a delete pods/app-1-x at 2026-03-01T10:00:30.000Z, 5.0 s after chaos-b took the Lease from it (at 2026-03-01T10:00:25.005Z): a former leader still writing',
    'chaos-b patch pods/app-1-x at 2026-03-01T10:01:02.000Z, 2.0 s after chaos-a took the Lease from it (at 2026-03-01T10:01:00.005Z): a former leader still writing',
    'chaos-c create pods/app-1-x at 2026-03-01T10:01:03.000Z while chaos-a held the Lease (since 2026-03-01T10:01:00.005Z)',
  ]);
});

test('writeTimeline: the writes of the resources asked for and each change of Lease holder, seconds after from', () => {
  const lines = writeTimeline(pauseLog(), { from: T0 + 1_000, resources: new Set(['pods']) });
  assert.deepEqual(lines, [
    '-1.000 s chaos-a takes the Lease',
    '+0.000 s chaos-a create pods/app-1-x 200',
    '+8.000 s chaos-a delete pods/app-1-x 200',
    '+24.000 s chaos-b takes the Lease',
    '+25.000 s chaos-b create pods/app-1-x 200',
  ]);
  assert.deepEqual(writeTimeline(pauseLog(), { from: T0, resources: new Set(['pods']), limit: 2 }), [
    '(3 earlier)',
    '+25.000 s chaos-b takes the Lease',
    '+26.000 s chaos-b create pods/app-1-x 200',
  ]);
});
