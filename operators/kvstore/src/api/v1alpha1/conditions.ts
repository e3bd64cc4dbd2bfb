// scaffolded by opkit — this file is yours to edit
/**
 * @module api/v1alpha1/conditions
 * The Conditions schema of a status (the shape of metav1.Condition), shared by both kinds. `opkit create api`
 * writes a copy of it into every kind; it is kept once here until the runtime ships one (`@opkit/runtime/crd`).
 */
import { Type } from '@sinclair/typebox';

/** `status.conditions`: a list keyed by `type`, as metav1.Condition. */
export const Conditions = Type.Array(
  Type.Object({
    type: Type.String({ minLength: 1, maxLength: 316 }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
    reason: Type.String({ minLength: 1, maxLength: 1024 }),
    message: Type.String({ maxLength: 32768 }),
    lastTransitionTime: Type.String({ format: 'date-time' }),
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64', minimum: 0 })),
  }),
  { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] },
);
