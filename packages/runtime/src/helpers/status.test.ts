import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Client } from '../client/client.ts';
import { type KubeObject, resource } from '../client/resource.ts';
import { jsonEqual, statusPatch, updateStatusIfChanged } from './status.ts';

interface Widget extends KubeObject {
  status?: { n: number };
}
const Widgets = resource<Widget>({
  group: 'test.opkit.dev',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
});

test('jsonEqual ignores key order and undefined members, not array order', () => {
  assert.ok(jsonEqual({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }));
  assert.ok(jsonEqual({ a: 1, b: undefined }, { a: 1 }));
  assert.ok(!jsonEqual({ a: [1, 2] }, { a: [2, 1] }));
  assert.ok(!jsonEqual({ a: 1 }, { a: '1' }));
  assert.ok(!jsonEqual(undefined, {}));
  assert.ok(jsonEqual(null, null));
  assert.ok(!jsonEqual([], {}));
});

test('statusPatch sets the new fields and removes the ones that went away', () => {
  assert.deepEqual(statusPatch({ a: 1, b: [1], c: 'x' }, { a: 2, b: [1, 2] }), {
    status: { a: 2, b: [1, 2], c: null },
  });
  assert.deepEqual(statusPatch(undefined, { a: 1 }), { status: { a: 1 } });
});

test('read-your-own-writes: a status just written is not written again from a cache that has not seen it', async () => {
  const patches: unknown[] = [];
  const client = {
    patchStatus: async (_r: unknown, _ref: unknown, patch: unknown) => {
      patches.push(patch);
      return {} as Widget;
    },
  } as unknown as Client;
  const cached: Widget = {
    metadata: { name: 'w', namespace: 'ns', uid: 'u1', resourceVersion: '10' },
    status: { n: 1 },
  };
  await updateStatusIfChanged(client, Widgets, cached, { n: 2 });
  assert.equal(patches.length, 1);
  // a child's event reconciles again before the write's own event: the cache still says n: 1 at resourceVersion 10
  assert.equal(await updateStatusIfChanged(client, Widgets, cached, { n: 2 }), undefined);
  assert.equal(patches.length, 1, 'the same status is not written twice');
  // a different status is still written, as a patch from what was written
  await updateStatusIfChanged(client, Widgets, cached, { n: 3 });
  assert.deepEqual(patches[1], { status: { n: 3 } });
  // once the cache moved on, the cached object is the reference again
  const moved: Widget = { ...cached, metadata: { ...cached.metadata, resourceVersion: '12' }, status: { n: 3 } };
  assert.equal(await updateStatusIfChanged(client, Widgets, moved, { n: 3 }), undefined);
  const reverted: Widget = { ...cached, metadata: { ...cached.metadata, resourceVersion: '13' }, status: { n: 1 } };
  await updateStatusIfChanged(client, Widgets, reverted, { n: 3 });
  assert.equal(patches.length, 3, 'someone else changed it: written again');
});
