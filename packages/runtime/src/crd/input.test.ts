import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import type { Client } from '../client/client.ts';
import type { InputOf, ObjectOf } from '../client/resource.ts';
import { Defaulted } from './input.ts';
import { defineKind } from './kind.ts';

const Things = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Thing',
  plural: 'things',
  spec: Type.Object({
    replicas: Defaulted(Type.Integer({ minimum: 0 }), 1),
    image: Type.String(),
    note: Type.Optional(Type.String()),
  }),
  status: Type.Object({ ready: Type.Optional(Type.Boolean()) }),
});

type Thing = ObjectOf<typeof Things>;
type ThingInput = InputOf<typeof Things>;

test('ObjectOf: a defaulted field is required on read; InputOf: optional on create', () => {
  const read: Thing = { metadata: { name: 'a' }, spec: { replicas: 2, image: 'x' } };
  const input: ThingInput = { metadata: { name: 'a' }, spec: { image: 'x' } };
  // @ts-expect-error replicas is defaulted by the apiserver, so an object read back always has it
  const missing: Thing = { metadata: { name: 'a' }, spec: { image: 'x' } };
  // @ts-expect-error image has no default: a create must set it
  const noImage: ThingInput = { metadata: { name: 'a' }, spec: {} };
  const replicas: number = read.spec.replicas;
  assert.equal(replicas, 2);
  assert.equal(input.spec.replicas, undefined);
  assert.ok(missing && noImage);
});

test('Defaulted writes the default into the generated CRD schema', () => {
  const spec = Things.crd().spec.versions[0]?.schema?.openAPIV3Schema?.properties?.spec as {
    properties: Record<string, { default?: unknown }>;
  };
  assert.equal(spec.properties.replicas?.default, 1);
});

test('the client takes the input type on create and returns the object type', () => {
  const typed = async (client: Client): Promise<number> => {
    const created = await client.create(Things, { metadata: { name: 'a' }, spec: { image: 'x' } });
    // @ts-expect-error a create checks the input against the kind
    await client.create(Things, { metadata: { name: 'a' }, spec: { replicas: 1 } });
    const read: Thing | undefined = await client.getIfExists(Things, { name: 'a', namespace: 'd' });
    return created.spec.replicas + (read?.spec.replicas ?? 0);
  };
  assert.equal(typeof typed, 'function');
});
