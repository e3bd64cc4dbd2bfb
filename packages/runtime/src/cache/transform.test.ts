import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '../client/builtins.ts';
import { dropManagedFields, keepFields, maskOf, thenDropManagedFields } from './transform.ts';

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
  // a longer path under one kept whole adds nothing (and no stray top-level field)
  const wide = keepFields<Pod>('spec', 'spec.containers.image');
  assert.deepEqual(wide(pod()).spec, pod().spec);
  assert.deepEqual([...(maskOf(wide)?.fields.keys() ?? [])].sort(), ['apiVersion', 'kind', 'metadata', 'spec']);
});

test('dropManagedFields removes metadata.managedFields only', () => {
  const out = dropManagedFields(pod());
  assert.equal(out.metadata.managedFields, undefined);
  assert.equal(out.spec?.nodeName, 'n1');
});

test('keepFields applies a path through a list to each of its items', () => {
  const t = keepFields<Pod>('spec.containers.image');
  const p = pod();
  p.spec = {
    containers: [
      { name: 'a', image: 'x:1', args: ['-v'] },
      { name: 'b', image: 'y:2' },
    ],
  };
  assert.deepEqual(t(p).spec, { containers: [{ image: 'x:1' }, { image: 'y:2' }] });
});

test('the transforms carry the field masks a protobuf decoder skips by', () => {
  assert.equal(
    maskOf((o: Pod) => o),
    undefined,
    "a user's own transform drops nothing it says",
  );
  const drop = maskOf(dropManagedFields);
  assert.equal(drop?.rest, true);
  const meta = drop?.fields.get('metadata');
  assert.ok(typeof meta === 'object' && meta.rest === true && meta.fields.get('managedFields') === false);

  const keep = keepFields<Pod>('status.phase');
  const both = maskOf(thenDropManagedFields(keep));
  assert.equal(both?.rest, false);
  assert.equal(both?.fields.get('apiVersion'), true);
  const status = both?.fields.get('status');
  assert.ok(typeof status === 'object' && status.rest === false && status.fields.get('phase') === true);
  const kept = both?.fields.get('metadata');
  assert.ok(typeof kept === 'object' && kept.rest === true && kept.fields.get('managedFields') === false);
  assert.equal(maskOf(keep)?.fields.get('metadata'), true, 'the transform’s own mask is left as it was');

  // a user's transform then the drop: nothing is skipped (the user's transform may read managedFields)
  const own = maskOf(thenDropManagedFields((o: Pod) => o));
  assert.equal(own, undefined);
  assert.equal(thenDropManagedFields(undefined), dropManagedFields);
});
