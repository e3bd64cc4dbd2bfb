import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../client/builtins.ts';
import { dropManagedFields, keepFields } from './transform.ts';

const pod = (): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'p',
    namespace: 'ns',
    labels: { a: 'b' },
    managedFields: [{ manager: 'kubelet' }],
  },
  spec: { containers: [{ name: 'app', image: 'busybox' }], nodeName: 'n1' },
  status: {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: 'True' }],
    podIP: '10.0.0.1',
    containerStatuses: [],
  },
});

test('keepFields keeps apiVersion, kind, metadata and the named paths, and drops the rest', () => {
  const t = keepFields<Pod>('status.phase', 'status.conditions');
  const out = t(pod());
  assert.deepEqual(Object.keys(out).sort(), ['apiVersion', 'kind', 'metadata', 'status']);
  assert.deepEqual(out.status, { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] });
  assert.deepEqual(out.metadata.labels, { a: 'b' });
  // objects without the path are left as they are; a whole subtree is kept by naming it
  assert.deepEqual(t({ metadata: { name: 'x' } } as Pod), { metadata: { name: 'x' } });
  assert.deepEqual(keepFields<Pod>('spec')(pod()).spec?.nodeName, 'n1');
  assert.throws(() => keepFields('status..phase'), /empty segment/);
});

test('dropManagedFields removes metadata.managedFields only', () => {
  const out = dropManagedFields(pod());
  assert.equal(out.metadata.managedFields, undefined);
  assert.equal(out.spec?.nodeName, 'n1');
});
