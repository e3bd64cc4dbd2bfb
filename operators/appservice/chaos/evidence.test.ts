import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '@opkit/testenv';
import { overshootEvidence } from './evidence.ts';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

test('overshootEvidence: the counts seen, the pod writes and Lease takeovers, and what the replicas said, in order', () => {
  const write = (by: string, resource: string, s: number): AuditEvent => ({
    verb: resource === 'leases' ? 'update' : 'create',
    user: { username: 'system:serviceaccount:appservice-system:appservice-operator' },
    userAgent: `opkit/0.1.0 (appservice-operator; ${by})`,
    objectRef: { resource, name: resource === 'leases' ? 'leader' : 'app-0-x' },
    responseStatus: { code: 201 },
    requestReceivedTimestamp: at(s),
  });
  const text = overshootEvidence(
    T0,
    [{ invariant: 'overshoot', detail: 'app-0: 3 live pods, at most 2 allowed', at: T0 + 15_500 }],
    [write('chaos-a', 'leases', -1), write('chaos-b', 'leases', 15), write('chaos-b', 'pods', 15.2)],
    new Map([
      ['chaos-b', `{"level":"info","time":"${at(15)}","msg":"became leader"}\n{"level":"info","msg":"reconciled"}`],
    ]),
  );
  assert.equal(
    text,
    'evidence of the overshoot (seconds after the fault began): seen app-0: 3 live pods, at most 2 allowed at +15.500 s' +
      ' | writes: -1.000 s chaos-a takes the Lease; +15.000 s chaos-b takes the Lease; +15.200 s chaos-b create pods/app-0-x 201' +
      ' | the replicas said: +15.000 s chaos-b: became leader',
  );
});
