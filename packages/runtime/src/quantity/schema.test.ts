/**
 * `QuantitySchema()`: the structural schema and CRD it gives through `defineKind` are exactly what Kubernetes' own
 * CRDs carry for a `resource.Quantity` field; the pattern refuses what is no quantity.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Static, Type } from '@sinclair/typebox';
import { Defaulted } from '../crd/input.ts';
import { defineKind } from '../crd/kind.ts';
import { structuralSchema } from '../crd/schema.ts';
import { Quantity } from './quantity.ts';
import { QUANTITY_PATTERN, QuantitySchema } from './schema.ts';

const KUBERNETES_QUANTITY = {
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  pattern:
    '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  'x-kubernetes-int-or-string': true,
};

test('the structural schema is what Kubernetes publishes for a resource.Quantity', () => {
  assert.deepEqual(structuralSchema(QuantitySchema()), KUBERNETES_QUANTITY);
  assert.deepEqual(structuralSchema(QuantitySchema({ description: 'Size.', default: '1Gi', examples: ['10Gi'] })), {
    ...KUBERNETES_QUANTITY,
    default: '1Gi',
    description: 'Size.',
    example: '10Gi',
  });
  assert.deepEqual(structuralSchema(Defaulted(QuantitySchema(), '1Gi')), { ...KUBERNETES_QUANTITY, default: '1Gi' });
});

test('its static type is string | number', () => {
  const value: Static<ReturnType<typeof QuantitySchema>> = '1Gi';
  const other: Static<ReturnType<typeof QuantitySchema>> = 500;
  assert.ok(Quantity.parse(value).cmp(other) > 0);
});

test('a kind with a quantity field: its CRD carries the schema at the field', () => {
  const Databases = defineKind({
    group: 'example.com',
    version: 'v1',
    kind: 'Database',
    plural: 'databases',
    spec: Type.Object({ storage: QuantitySchema(), limits: Type.Record(Type.String(), QuantitySchema()) }),
  });
  const crd = Databases.crd();
  const version = crd.spec.versions[0];
  const spec = version?.schema?.openAPIV3Schema?.properties?.spec;
  assert.deepEqual(spec?.properties?.storage, KUBERNETES_QUANTITY);
  assert.deepEqual(spec?.properties?.limits?.additionalProperties, KUBERNETES_QUANTITY);
});

test('the pattern refuses what is no quantity and accepts what the apiserver accepts', () => {
  const pattern = new RegExp(QUANTITY_PATTERN);
  for (const ok of ['1Gi', '500', '1.5e3', '500m', '-1', '+.5', '1.', '1E', '1e-3']) assert.match(ok, pattern);
  for (const bad of ['lots', '1 Gi', '1gi', '1i', '', '.', '1e', 'Gi']) assert.doesNotMatch(bad, pattern);
  // The corners the pattern lets through and the parser refuses, as apimachinery's do:
  for (const corner of ['1e1.5', '1e99999999999999999999']) {
    assert.match(corner, pattern);
    assert.throws(() => Quantity.parse(corner));
  }
});
