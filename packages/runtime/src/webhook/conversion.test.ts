import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { defineKind } from '../crd/kind.ts';
import { converter } from './conversion.ts';

const Thing = defineKind({
  group: 'x.example.com',
  kind: 'Thing',
  plural: 'things',
  storage: 'v2',
  versions: {
    v1: { spec: Type.Object({ size: Type.Integer() }) },
    v2: { spec: Type.Object({ dimensions: Type.Object({ size: Type.Integer() }) }) },
  },
  conversions: {
    v1: {
      toHub: ({ metadata, spec }) => ({ metadata, spec: { dimensions: { size: spec.size } } }),
      fromHub: ({ metadata, spec }) => {
        if (spec.dimensions.size < 0) throw new Error('negative size');
        return { metadata, spec: { size: spec.dimensions.size } };
      },
    },
  },
});
const ctx = { signal: new AbortController().signal };
const v1 = (name: string, size: number) => ({
  apiVersion: 'x.example.com/v1',
  kind: 'Thing',
  metadata: { name },
  spec: { size },
});

test('a ConversionReview converts every object, in order, to the desired version', async () => {
  const r = await converter(Thing)(
    { uid: 'c1', desiredAPIVersion: 'x.example.com/v2', objects: [v1('a', 1), v1('b', 2)] },
    ctx,
  );
  assert.deepEqual(r, {
    uid: 'c1',
    result: { status: 'Success' },
    convertedObjects: [
      { apiVersion: 'x.example.com/v2', kind: 'Thing', metadata: { name: 'a' }, spec: { dimensions: { size: 1 } } },
      { apiVersion: 'x.example.com/v2', kind: 'Thing', metadata: { name: 'b' }, spec: { dimensions: { size: 2 } } },
    ],
  });
});

test('one object that cannot be converted fails the whole review, naming it', async () => {
  const bad = {
    apiVersion: 'x.example.com/v2',
    kind: 'Thing',
    metadata: { name: 'neg' },
    spec: { dimensions: { size: -1 } },
  };
  const r = await converter(Thing)(
    { uid: 'c2', desiredAPIVersion: 'x.example.com/v1', objects: [v1('a', 1), bad] },
    ctx,
  );
  assert.equal(r.result.status, 'Failure');
  assert.deepEqual(r.convertedObjects, []);
  assert.match(r.result.message ?? '', /^objects\[1\] \(neg\): converting Thing neg to v1: negative size$/);
  for (const junk of [null, 'x', [], { kind: 'Other', apiVersion: 'x.example.com/v1' }]) {
    const j = await converter(Thing)({ uid: 'c3', desiredAPIVersion: 'x.example.com/v1', objects: [junk] }, ctx);
    assert.equal(j.result.status, 'Failure');
  }
});
