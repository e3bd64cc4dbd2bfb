/**
 * @module crd/conditions
 * The schema of a kind's `status.conditions`: metav1.Condition's shape and validation, as Kubernetes' own OpenAPI
 * (and every kubebuilder CRD) states it, for `defineKind`'s status schema:
 *
 * ```ts
 * import { defineKind } from '@opkit/runtime';
 * import { ConditionsSchema } from '@opkit/runtime/crd';
 * import { Type } from '@sinclair/typebox';
 *
 * export const Backups = defineKind({
 *   group: 'example.com',
 *   version: 'v1',
 *   kind: 'Backup',
 *   plural: 'backups',
 *   scope: 'Namespaced',
 *   spec: Type.Object({ storeName: Type.String() }),
 *   status: Type.Object({ conditions: Type.Optional(ConditionsSchema) }),
 *   subresources: { status: true },
 * });
 * ```
 *
 * Guarantees: the apiserver refuses a condition that metav1.Condition's validation refuses — `type` a qualified name
 * (an optional DNS subdomain prefix and `/`) of at most 316 characters; `status` `True`, `False` or `Unknown`;
 * `observedGeneration` an int64 ≥ 0; `lastTransitionTime` a date-time; `reason` CamelCase (1 to 1024 characters,
 * `^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`); `message` at most 32768 characters; all but `observedGeneration`
 * required — and the list is a map keyed by `type` (`x-kubernetes-list-type: map`), so server-side apply merges
 * conditions by type and two of one type are refused. Its static type is `Condition` (helpers/conditions.ts), both
 * ways: what `setCondition` returns is written back as it is, without a cast.
 */
import { Type } from '@sinclair/typebox';

/** metav1.Condition's `type`: a CamelCase name, optionally prefixed by a DNS subdomain and `/`. */
const TYPE =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$';
/** metav1.Condition's `reason`: CamelCase, with `_`, `,` and `:` allowed inside. */
const REASON = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';

/** One status condition (metav1.Condition), with its validation; `Static<typeof ConditionSchema>` is `Condition`. */
export const ConditionSchema = Type.Object(
  {
    type: Type.String({
      maxLength: 316,
      pattern: TYPE,
      description: 'The type of the condition, in CamelCase or as foo.example.com/CamelCase (one condition per type).',
    }),
    status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')], {
      description: 'The status of the condition: True, False or Unknown.',
    }),
    observedGeneration: Type.Optional(
      Type.Integer({
        minimum: 0,
        format: 'int64',
        description: 'The .metadata.generation the condition was set from.',
      }),
    ),
    lastTransitionTime: Type.String({
      format: 'date-time',
      description: 'When the condition last changed from one status to another.',
    }),
    reason: Type.String({
      minLength: 1,
      maxLength: 1024,
      pattern: REASON,
      description: "A CamelCase identifier of the condition's last transition, for programs.",
    }),
    message: Type.String({
      maxLength: 32_768,
      description: 'A message for people with details about the transition; may be empty.',
    }),
  },
  { description: 'One aspect of the current state of the object (metav1.Condition).' },
);

/**
 * A kind's `status.conditions`: a list of `ConditionSchema` that is a map keyed by `type`. Use it as
 * `conditions: Type.Optional(ConditionsSchema)`.
 */
export const ConditionsSchema = Type.Array(ConditionSchema, {
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
  description: 'The latest observations of the state of the object, one per type.',
});
