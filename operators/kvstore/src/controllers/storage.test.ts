import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PersistentVolumeClaim } from '@opkit/runtime/kinds';
import { store } from './fixtures.ts';
import { pvcsToGrow } from './storage.ts';

const pvc = (name: string, storage: string, deleting = false): PersistentVolumeClaim => ({
  metadata: { name, namespace: 'ns', ...(deleting ? { deletionTimestamp: '2026-12-02T00:00:00Z' } : {}) },
  spec: { resources: { requests: { storage } } },
});

test("the store's PVCs smaller than spec.storage grow; equal sizes in other units, others' PVCs and deleted ones do not", () => {
  const grow = pvcsToGrow(store({ storage: '2Gi' }), [
    pvc('data-db-0', '1Gi'),
    pvc('data-db-1', '2048Mi'),
    pvc('data-db-2', '1Gi', true),
    pvc('data-dbx-0', '1Gi'),
    pvc('data-db-backup', '1Gi'),
    pvc('data-db-3', '3Gi'),
  ]);
  assert.deepEqual(
    grow.map((p) => p.metadata.name),
    ['data-db-0'],
  );
});
