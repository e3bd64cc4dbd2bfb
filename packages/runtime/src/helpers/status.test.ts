import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import type { Client } from '../client/client.ts';
import { type KubeObject, resource } from '../client/resource.ts';
import { markStatusSubresource } from '../internal/custom-kinds.ts';
import { markPartial } from '../internal/partial.ts';
import { jsonEqual, mergePatch, statusPatch, updateStatusIfChanged } from './status.ts';

interface Widget extends KubeObject {
  status?: { n: number; note?: string };
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
      return { metadata: { name: 'w' } } as Widget;
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

/** RFC 7386 §2: the result of applying merge patch `patch` to `target`. */
function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** JSON values without null (a merge patch cannot set a member to null: null removes it). */
const noNullJson: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    fc.boolean(),
    fc.integer(),
    fc.string({ maxLength: 4 }),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'endpoints', 'primary', 'secondary'), tie('value'), {
      maxKeys: 4,
      noNullPrototype: true,
    }),
  ),
})).value;

test('statusPatch removes a nested field that went away (null at any depth) and replaces arrays whole', () => {
  const before = { endpoints: { primary: 'p:80', secondary: 's:80' }, ports: [80, 443], phase: 'Ready' };
  const after = { endpoints: { primary: 'p:80' }, ports: [80], phase: 'Ready' };
  const { status } = statusPatch(before, after) as { status: unknown };
  assert.deepEqual(applyMergePatch(before, status), after);
  assert.deepEqual((status as { endpoints: unknown }).endpoints, { primary: 'p:80', secondary: null });
  assert.deepEqual((status as { ports: unknown }).ports, [80], 'an array is replaced whole');
});

test('statusPatch: applying the patch (RFC 7386) to the old status gives the new one', () => {
  const statusOf = fc.dictionary(fc.constantFrom('a', 'b', 'endpoints', 'phase'), noNullJson, {
    maxKeys: 4,
    noNullPrototype: true,
  });
  fc.assert(
    fc.property(fc.option(statusOf, { nil: undefined }), statusOf, (from, to) => {
      const { status } = statusPatch(from, to) as { status: unknown };
      assert.deepEqual(applyMergePatch(from, status), to);
    }),
    { numRuns: 2_000 },
  );
  fc.assert(
    fc.property(noNullJson, noNullJson, (from, to) =>
      assert.deepEqual(applyMergePatch(from, mergePatch(from, to)), to),
    ),
    { numRuns: 2_000 },
  );
});

test('a status written for an object the cache no longer holds is not kept (no copy per deleted object)', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let patches = 0;
  const client = {
    patchStatus: async () => {
      patches += 1;
      return { metadata: { name: 'w' } } as Widget;
    },
  } as unknown as Client;
  // what an informer's store holds: the objects, replaced on every update and dropped on delete
  const store = new Map<string, Widget>();
  for (let i = 0; i < 2_000; i++) {
    store.set(`ns/w${i}`, { metadata: { name: `w${i}`, namespace: 'ns', uid: `u${i}`, resourceVersion: '1' } });
  }
  gc();
  const base = process.memoryUsage().heapUsed;
  const statusOf = (w: Widget) => ({ n: 1, note: `${w.metadata.name}:${'x'.repeat(10_000)}` });
  // 10 kB of status per object: 20 MB if each written status were kept
  for (const w of store.values()) await updateStatusIfChanged(client, Widgets, w, statusOf(w));
  for (const w of store.values()) await updateStatusIfChanged(client, Widgets, w, statusOf(w));
  assert.equal(patches, 2_000, 'while the cache holds the objects, their written statuses are known');
  store.clear(); // every object deleted
  gc();
  const kept = process.memoryUsage().heapUsed - base;
  assert.ok(kept < 4_000_000, `${(kept / 1e6).toFixed(1)} MB kept after 2,000 deletes`);
});

test("a custom kind's status is updated with the object as read (no managedFields); an object a cache transform made is merge-patched", async () => {
  const calls: { method: string; body: unknown }[] = [];
  const client = {
    updateStatus: async (_r: unknown, body: Widget) => {
      calls.push({ method: 'PUT', body });
      return { metadata: { name: 'w', resourceVersion: '11' } } as Widget;
    },
    patchStatus: async (_r: unknown, _ref: unknown, body: unknown) => {
      calls.push({ method: 'PATCH', body });
      return { metadata: { name: 'w', resourceVersion: '12' } } as Widget;
    },
  } as unknown as Client;
  const Custom = markStatusSubresource(resource<Widget>({ ...Widgets }));
  const meta = { name: 'w', namespace: 'ns', uid: 'u1', resourceVersion: '10', labels: { a: 'b' } };
  const read: Widget = { metadata: { ...meta, managedFields: [{ manager: 'author' }] } };
  await updateStatusIfChanged(client, Custom, read, { n: 1 });
  assert.deepEqual(calls[0], {
    method: 'PUT',
    body: { apiVersion: Custom.apiVersion, kind: Custom.kind, metadata: meta, status: { n: 1 } },
  });
  const transformed = markPartial<Widget>({ metadata: { ...meta } });
  await updateStatusIfChanged(client, Custom, transformed, { n: 1 });
  assert.equal(calls[1]?.method, 'PATCH', 'a transformed object may lack stored fields');
  await updateStatusIfChanged(client, Widgets, { metadata: { ...meta } }, { n: 1 });
  assert.equal(calls[2]?.method, 'PATCH', 'a kind not made by defineKind');
});
