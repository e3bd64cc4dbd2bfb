import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEvent } from '@opkit/testenv';
import { requestKey, serverMs, serverMsByRequest } from './audit.ts';

const at = (ms: number) => new Date(Date.UTC(2026, 10, 30, 12, 0, 0, ms)).toISOString();
const event = (verb: string, resource: string, subresource: string | undefined, ms: number): AuditEvent =>
  ({
    verb,
    objectRef: { resource, ...(subresource ? { subresource } : {}) },
    requestReceivedTimestamp: at(0),
    stageTimestamp: at(ms),
  }) as AuditEvent;

test('the apiserver time per request, by verb and resource: which request is slow', () => {
  const events = [
    event('patch', 'appservices', 'status', 40),
    event('create', 'pods', undefined, 12),
    event('patch', 'appservices', 'status', 20),
    event('create', 'pods', undefined, 8),
    { verb: 'create', objectRef: { resource: 'pods' } } as AuditEvent, // no timestamps: left out
  ];
  assert.equal(requestKey(events[0] as AuditEvent), 'patch appservices/status');
  assert.deepEqual(serverMs(events), [8, 12, 20, 40]);
  assert.deepEqual(serverMsByRequest(events), {
    'patch appservices/status': { p50: 20, p99: 40 },
    'create pods': { p50: 8, p99: 12 },
  });
});
