import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Static, Type } from '@sinclair/typebox';
import type { PodTemplateSpec } from '../client/kinds/core.ts';
import { PodTemplateSpecSchema } from '../client/schemas/core.ts';
import { withLimits } from './limits.ts';
import { structuralSchema } from './schema.ts';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

test('withLimits bounds the fields named, through lists and maps, and changes nothing else', () => {
  const before = JSON.stringify(PodTemplateSpecSchema);
  const limited = withLimits(PodTemplateSpecSchema, {
    'spec.containers': { maxItems: 8 },
    'spec.containers[].env': { maxItems: 64 },
    'spec.nodeSelector': { maxProperties: 16 },
    'spec.nodeSelector.*': { maxLength: 253 },
  });
  const same: Equal<Static<typeof limited>, PodTemplateSpec> = true;
  assert.ok(same);
  assert.equal(JSON.stringify(PodTemplateSpecSchema), before, 'the embedded schema is not changed');
  const out = structuralSchema(Type.Object({ template: limited }), 'spec') as {
    properties: { template: { properties: { spec: { properties: Record<string, Record<string, unknown>> } } } };
  };
  const spec = out.properties.template.properties.spec.properties;
  assert.equal(spec.containers?.maxItems, 8);
  const items = spec.containers?.items as { properties: { env: { maxItems: number } } } | undefined;
  assert.equal(items?.properties.env.maxItems, 64);
  assert.equal(spec.nodeSelector?.maxProperties, 16);
  const values = spec.nodeSelector?.additionalProperties as { maxLength: number } | undefined;
  assert.equal(values?.maxLength, 253);
  assert.equal(spec.initContainers?.maxItems, undefined, 'the others are as they were');
});

test('a path that does not exist, or a bound of the wrong kind, names the path and what is there', () => {
  assert.throws(() => withLimits(PodTemplateSpecSchema, { 'spec.containerz': { maxItems: 1 } }), {
    name: 'CrdSchemaError',
    message: /^spec\.containerz: no field "containerz" here; its fields: .*containers/,
  });
  assert.throws(() => withLimits(PodTemplateSpecSchema, { 'spec.hostname': { maxItems: 1 } }), {
    message: 'spec.hostname: maxItems bounds an array, and this field is a string',
  });
  assert.throws(() => withLimits(PodTemplateSpecSchema, { 'spec.containers': { maxItems: -1 } }), {
    message: /maxItems must be a non-negative integer, not -1/,
  });
  assert.throws(() => withLimits(PodTemplateSpecSchema, { 'spec.hostname[]': { maxLength: 3 } }), {
    message: /^spec\.hostname\[\]: no list here \(a string\): drop the \[\]/,
  });
});
