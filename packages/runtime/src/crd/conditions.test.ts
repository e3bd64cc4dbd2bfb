/**
 * The conditions schema: the structural schema it becomes is metav1.Condition's (as Kubernetes' OpenAPI and
 * kubebuilder's CRDs state it), and its static type is `Condition` both ways, so a kind's conditions go through
 * `setCondition` and back into its status without a cast (a type-level test: it fails the type check otherwise).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Static, Type } from '@sinclair/typebox';
import type { ObjectOf } from '../client/resource.ts';
import { type Condition, setCondition } from '../helpers/conditions.ts';
import { ConditionSchema, ConditionsSchema } from './conditions.ts';
import { defineKind } from './kind.ts';
import { structuralSchema } from './schema.ts';

/** True exactly when `A` and `B` are the same type. */
type Equal<A, B> = (<X>() => X extends A ? 1 : 2) extends <X>() => X extends B ? 1 : 2 ? true : false;

const sameType: Equal<Static<typeof ConditionSchema>, Condition> = true;

const Backups = defineKind({
  group: 'example.com',
  version: 'v1',
  kind: 'Backup',
  plural: 'backups',
  scope: 'Namespaced',
  spec: Type.Object({ storeName: Type.String() }),
  status: Type.Object({
    observedGeneration: Type.Optional(Type.Integer()),
    conditions: Type.Optional(ConditionsSchema),
  }),
  subresources: { status: true },
});

/** Never called: only type-checked. A kind's conditions in, `setCondition`'s result back, no cast. */
export function writeBack(obj: ObjectOf<typeof Backups>): NonNullable<ObjectOf<typeof Backups>['status']> {
  const { conditions } = setCondition(obj.status?.conditions, { type: 'Ready', status: 'True', reason: 'Done' });
  const ready: Condition | undefined = obj.status?.conditions?.[0];
  void ready;
  return { ...obj.status, conditions };
}

test('the conditions schema is metav1.Condition’s, a list map keyed by type', () => {
  assert.equal(sameType, true);
  const s = structuralSchema(ConditionsSchema) as {
    type: string;
    'x-kubernetes-list-type': string;
    'x-kubernetes-list-map-keys': string[];
    items: { required: string[]; properties: Record<string, Record<string, unknown>> };
  };
  assert.equal(s.type, 'array');
  assert.equal(s['x-kubernetes-list-type'], 'map');
  assert.deepEqual(s['x-kubernetes-list-map-keys'], ['type']);
  assert.deepEqual([...s.items.required].sort(), ['lastTransitionTime', 'message', 'reason', 'status', 'type']);
  const p = s.items.properties;
  assert.deepEqual(
    { ...p.type, description: undefined },
    {
      type: 'string',
      maxLength: 316,
      pattern:
        '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
      description: undefined,
    },
  );
  assert.deepEqual(p.status?.enum, ['True', 'False', 'Unknown']);
  assert.equal(p.status?.type, 'string');
  assert.deepEqual(
    [p.observedGeneration?.type, p.observedGeneration?.format, p.observedGeneration?.minimum],
    ['integer', 'int64', 0],
  );
  assert.deepEqual([p.lastTransitionTime?.type, p.lastTransitionTime?.format], ['string', 'date-time']);
  assert.deepEqual(
    [p.reason?.minLength, p.reason?.maxLength, p.reason?.pattern],
    [1, 1024, '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'],
  );
  assert.equal(p.message?.maxLength, 32_768);
  assert.ok(Backups.crd(), 'a kind with it generates its CRD');
});

test('the patterns accept what setCondition writes and refuse what metav1.Condition refuses', () => {
  const type = new RegExp(ConditionSchema.properties.type.pattern ?? '');
  const reason = new RegExp(ConditionSchema.properties.reason.pattern ?? '');
  for (const ok of ['Ready', 'example.com/Degraded', 'a.b-c/X_y.z']) assert.match(ok, type);
  for (const bad of ['', 'Ready!', '/Ready', 'Example.COM/Ready', 'Ready-']) assert.doesNotMatch(bad, type);
  for (const ok of ['Done', 'A', 'Min_Replicas:1,ok']) assert.match(ok, reason);
  for (const bad of ['', '1Done', 'Done:', 'no spaces']) assert.doesNotMatch(bad, reason);
});
