// scaffolded by opkit — this file is yours to edit
/**
 * @module api/v1/widget
 * The Widget API (`planted.example.com/v1`): `spec.replicas` ConfigMaps that belong to it, and, while `spec.run` is
 * true, a Job. What each planted operator does with a Widget is in src/controllers/planted/.
 */
import { defineKind, type ObjectOf } from '@opkit/runtime';
import { type Static, Type } from '@sinclair/typebox';

export const WidgetSpec = Type.Object(
  {
    replicas: Type.Integer({ minimum: 0, maximum: 10, default: 2, description: 'How many parts (ConfigMaps).' }),
    run: Type.Boolean({ default: false, description: 'Whether a Job runs for the Widget.' }),
  },
  { description: 'The desired state of a Widget.' },
);

export const WidgetStatus = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    replicas: Type.Optional(Type.Integer({ description: 'The parts that exist.' })),
    phase: Type.Optional(Type.String({ description: 'Creating, then Ready.' })),
    failures: Type.Optional(Type.Integer({ description: 'Creates the operator counted as failed.' })),
    lastReconciled: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { description: 'The observed state of a Widget.' },
);

export const Widgets = defineKind({
  group: 'planted.example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  scope: 'Namespaced',
  spec: WidgetSpec,
  status: WidgetStatus,
  subresources: { status: true },
});

export type WidgetSpec = Static<typeof WidgetSpec>;
export type WidgetStatus = Static<typeof WidgetStatus>;
export type Widget = ObjectOf<typeof Widgets>;
