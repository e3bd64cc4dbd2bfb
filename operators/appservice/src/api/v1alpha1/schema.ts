/**
 * @module api/v1alpha1/schema
 * The AppService API's first version (`app.example.com/v1alpha1`, served, no longer stored): a flat spec — image,
 * command, env, resources and ports next to replicas. The TypeBox schema is the single source of this version's part
 * of the CustomResourceDefinition and of its TypeScript types; api/appservice converts it to and from v1.
 *
 * Validation lives in the schema, so the apiserver refuses bad input with a message naming the field: replicas is a
 * non-negative int32, env names are valid and unique (a map-type list keyed by name), unknown fields are refused under
 * kubectl's strict field validation, and a CEL rule checks that resource limits are not below requests (a rule that
 * spans fields, which would otherwise only fail later, at pod creation).
 */

import { ConditionsSchema, Validated, type ValidationRule } from '@opkit/runtime/crd';
import { QuantitySchema } from '@opkit/runtime/quantity';
import { type Static, Type } from '@sinclair/typebox';

const quantity = QuantitySchema({ description: 'A Kubernetes quantity, e.g. 100m, 64Mi, 1.' });
const resourceList = Type.Object(
  { cpu: Type.Optional(quantity), memory: Type.Optional(quantity), 'ephemeral-storage': Type.Optional(quantity) },
  { description: 'cpu, memory and ephemeral-storage quantities.' },
);
const notBelow = (r: string) =>
  `(!has(self.limits.${r}) || !has(self.requests.${r}) || quantity(string(self.limits.${r})).compareTo(quantity(string(self.requests.${r}))) >= 0)`;

export const EnvVar = Type.Object({
  name: Type.String({
    minLength: 1,
    maxLength: 256,
    pattern: '^[-._a-zA-Z][-._a-zA-Z0-9]*$',
    description: 'Environment variable name: letters, digits, -, _ and ., not starting with a digit.',
  }),
  value: Type.Optional(Type.String({ maxLength: 32_768, description: 'The value (default empty).' })),
});

export const ContainerPort = Type.Object({
  containerPort: Type.Integer({ minimum: 1, maximum: 65_535, format: 'int32' }),
  name: Type.Optional(Type.String({ maxLength: 15, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$' })),
  protocol: Type.Optional(
    Type.Union([Type.Literal('TCP'), Type.Literal('UDP'), Type.Literal('SCTP')], { default: 'TCP' }),
  ),
});

/** Compute resources of each pod, with a CEL rule: limits not below requests. */
export const Resources = Type.Object(
  { requests: Type.Optional(resourceList), limits: Type.Optional(resourceList) },
  {
    description: 'Compute resources of each pod.',
    'x-kubernetes-validations': [
      {
        rule: `!has(self.limits) || !has(self.requests) || (${notBelow('cpu')} && ${notBelow('memory')})`,
        message: 'resources.limits must not be lower than resources.requests (cpu, memory)',
        reason: 'FieldValueInvalid',
      },
    ],
  },
);

/** What describes the pod: flat in v1alpha1's spec, under `spec.template` in v1. */
export const PodFields = {
  image: Type.String({
    minLength: 1,
    maxLength: 512,
    default: 'busybox',
    description: 'Container image (default busybox).',
  }),
  command: Type.Optional(
    Type.Array(Type.String({ maxLength: 4_096 }), {
      maxItems: 64,
      description: 'Entrypoint, instead of the image’s.',
    }),
  ),
  args: Type.Optional(
    Type.Array(Type.String({ maxLength: 4_096 }), { maxItems: 256, description: 'Arguments to the entrypoint.' }),
  ),
  env: Type.Optional(
    Type.Array(EnvVar, {
      maxItems: 256,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
      description: 'Environment variables; names are unique.',
    }),
  ),
  resources: Type.Optional(Resources),
  ports: Type.Optional(
    Type.Array(ContainerPort, {
      maxItems: 64,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['containerPort', 'protocol'],
      description: 'Ports the container listens on.',
    }),
  ),
};

/** How many pods to run: the same field, at the same path, in every version (the scale subresource reads it). */
export const Replicas = Type.Integer({
  minimum: 0,
  maximum: 10_000,
  default: 1,
  format: 'int32',
  description: 'How many pods to run (default 1).',
});

/**
 * The rollout's `maxUnavailable` (at `path` under the spec) may not exceed the replicas (1 when there are none) when it
 * is set or changed. Scaling down below it later is allowed: the rule reads the old object (`optionalOldSelf`, so it
 * runs on create too) and passes when the value is unchanged. A CEL rule, so the apiserver checks it with no webhook.
 */
export function maxUnavailableRule(path: 'maxUnavailable' | 'rollout.maxUnavailable'): ValidationRule {
  const optional = `.?${path.replaceAll('.', '.?')}`;
  const parts = path.split('.');
  const absent = parts.map((_, i) => `!has(self.${parts.slice(0, i + 1).join('.')})`).join(' || ');
  return {
    rule: `${absent} || self.${path} <= (self.replicas > 0 ? self.replicas : 1) || (oldSelf.hasValue() && oldSelf.value()${optional} == self${optional})`,
    optionalOldSelf: true,
    message: 'may not exceed replicas (1 when replicas is 0) when it is set or changed',
    fieldPath: `.${path}`,
  };
}

export const AppServiceSpec = Validated(
  Type.Object(
    {
      replicas: Replicas,
      ...PodFields,
      maxUnavailable: Type.Optional(
        Type.Integer({
          minimum: 1,
          format: 'int32',
          default: 1,
          description: 'During an image or template change, how many pods may be unavailable at once (default 1).',
        }),
      ),
    },
    { description: 'What to run.' },
  ),
  [maxUnavailableRule('maxUnavailable')],
);

export const AppServiceStatus = Type.Object(
  {
    replicas: Type.Optional(
      Type.Integer({ format: 'int32', description: 'Pods counted: Pending or Running, not terminating.' }),
    ),
    readyReplicas: Type.Optional(Type.Integer({ format: 'int32', description: 'Counted pods that are Ready.' })),
    updatedReplicas: Type.Optional(
      Type.Integer({ format: 'int32', description: 'Counted pods of the current template.' }),
    ),
    podNames: Type.Optional(Type.Array(Type.String(), { description: 'Names of the counted pods, sorted.' })),
    selector: Type.Optional(Type.String({ description: 'Label selector of the pods (for the scale subresource).' })),
    observedGeneration: Type.Optional(
      Type.Integer({ format: 'int64', description: 'The generation this status describes.' }),
    ),
    conditions: Type.Optional(ConditionsSchema),
  },
  { description: 'What runs.' },
);

export type AppServiceSpec = Static<typeof AppServiceSpec>;
export type AppServiceStatus = Static<typeof AppServiceStatus>;
