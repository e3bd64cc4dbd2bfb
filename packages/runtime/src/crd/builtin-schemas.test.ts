/**
 * The generated schemas of the built-in types (@opkit/runtime/schemas/*): every one is a structural schema a CRD
 * accepts (structuralSchema finds nothing to refuse), embedded ObjectMeta is the part a CRD keeps, and a kind that
 * embeds a job template makes a CRD whose descriptions `maxDescLen` cuts.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import { type TSchema, Type } from '@sinclair/typebox';
import { JobTemplateSpecSchema } from '../client/schemas/batch.ts';
import { ObjectMetaSchema } from '../client/schemas/meta.ts';
import { defineKind } from './kind.ts';
import { structuralSchema } from './schema.ts';

const DIR = new URL('../client/schemas/', import.meta.url);

test('every generated schema is structural: a CRD can hold each one', async () => {
  const names: string[] = [];
  for (const file of (await readdir(DIR)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
    const module = (await import(new URL(file, DIR).href)) as Record<string, TSchema>;
    for (const [name, schema] of Object.entries(module)) {
      assert.ok(name.endsWith('Schema'), `${file} exports ${name}, not an XSchema`);
      assert.doesNotThrow(() => structuralSchema(Type.Object({ field: schema }), name), `${file}: ${name}`);
      names.push(name);
    }
  }
  for (const expected of [
    'PodTemplateSpecSchema',
    'JobTemplateSpecSchema',
    'ContainerSchema',
    'ResourceRequirementsSchema',
    'VolumeSchema',
    'AffinitySchema',
    'TolerationSchema',
    'EnvVarSchema',
    'ObjectReferenceSchema',
  ])
    assert.ok(names.includes(expected), `${expected} is generated`);
  assert.ok(names.length > 400, `${names.length} schemas`);
});

test("embedded ObjectMeta keeps what controller-gen's generateEmbeddedObjectMeta keeps", () => {
  const meta = ObjectMetaSchema as unknown as { properties: Record<string, unknown> };
  assert.deepEqual(Object.keys(meta.properties), ['annotations', 'finalizers', 'labels', 'name', 'namespace']);
});

test('a kind embedding a job template: its CRD with upstream descriptions, and cut by maxDescLen', () => {
  const def = {
    group: 'batch.example.com',
    version: 'v1',
    kind: 'CronJob',
    plural: 'cronjobs',
    spec: Type.Object({ schedule: Type.String(), jobTemplate: JobTemplateSpecSchema }),
  };
  const full = JSON.stringify(defineKind(def).crd());
  const none = JSON.stringify(defineKind({ ...def, maxDescLen: 0 }).crd());
  const short = JSON.stringify(defineKind({ ...def, maxDescLen: 80 }).crd());
  assert.match(full, /List of containers belonging to the pod\. Containers cannot currently be added or removed\./);
  assert.equal(none.includes('"description"'), false);
  assert.ok(
    none.length < short.length && short.length < full.length,
    `${none.length} < ${short.length} < ${full.length}`,
  );
  assert.throws(() => defineKind({ ...def, maxDescLen: -1 }), { name: 'CrdSchemaError', message: /^maxDescLen: -1/ });
});
