import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '../audit-log.ts';
import { statusBehind, writesWhileSettled } from './convergence.ts';

const USER = 'system:serviceaccount:ops:gadget-operator';
const t0 = Date.parse('2026-12-05T10:00:00Z');
const event = (seconds: number, verb: string, resource: string, name: string, o: Partial<AuditEvent> = {}) =>
  ({
    verb,
    user: { username: USER },
    objectRef: { resource, namespace: 'ns', name, ...(resource === 'gadgets' ? { subresource: 'status' } : {}) },
    responseStatus: { code: 200 },
    requestReceivedTimestamp: new Date(t0 + seconds * 1000).toISOString(),
    ...o,
  }) as AuditEvent;

test('a write in the quiet window is named with its object and count; bookkeeping, reads and refusals never count', () => {
  const events = [
    event(1, 'update', 'gadgets', 'g1'), // before the window
    event(11, 'update', 'gadgets', 'g1'),
    event(13, 'update', 'gadgets', 'g1'),
    event(12, 'update', 'leases', 'gadget-operator'),
    event(12, 'create', 'events', 'g1.1234'),
    event(12, 'get', 'pods', 'p1'),
    event(12, 'patch', 'pods', 'p1', { responseStatus: { code: 409 } }),
    event(12, 'patch', 'pods', 'p2', { user: { username: 'system:admin' } }),
    event(21, 'delete', 'pods', 'p3'), // after the window
  ];
  const found = writesWhileSettled(events, { user: USER, from: t0 + 10_000, to: t0 + 20_000 });
  assert.equal(found.length, 1);
  assert.equal(found[0]?.object, 'gadgets/status ns/g1');
  assert.match(
    found[0]?.message ?? '',
    /^gadgets\/status ns\/g1: 2 writes \(update\) in the 10\.0 s after the desired state stopped changing, the first at 2026-12-05T10:00:11\.000Z/,
  );
  assert.deepEqual(writesWhileSettled(events, { user: USER, from: t0 + 14_000, to: t0 + 20_000 }), [], 'settled');
});

test('status caught up: observedGeneration behind generation is named; a status without it is not judged', () => {
  const found = statusBehind([
    { kind: 'Gadget', metadata: { name: 'a', namespace: 'ns', generation: 3 }, status: { observedGeneration: 2 } },
    { kind: 'Gadget', metadata: { name: 'b', namespace: 'ns', generation: 3 }, status: { observedGeneration: 3 } },
    { kind: 'Gadget', metadata: { name: 'c', namespace: 'ns', generation: 3 }, status: {} },
  ]);
  assert.deepEqual(
    found.map((v) => v.message),
    ['Gadget ns/a: status.observedGeneration is 2, metadata.generation 3: the status does not describe the spec'],
  );
});
