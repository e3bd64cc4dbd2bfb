/**
 * @module api/v1/appservice
 * The AppService API's storage version (`app.example.com/v1`). Against v1alpha1 it groups what describes the pod
 * under `spec.template` (image, command, args, env, resources, ports) and the rollout policy under `spec.rollout`,
 * so that future pod fields and rollout strategies have a place; `spec.replicas` stays where the scale subresource
 * and HPA expect it. Every v1alpha1 object has exactly one v1 form and back (api/appservice converts them), so no
 * field is lost whichever version a client uses.
 *
 * `spec.rollout.maxUnavailable` has no schema default: the defaulting webhook computes it from `spec.replicas`
 * (a quarter, at least 1), which a schema default cannot express. A CEL rule (`maxUnavailableRule`) refuses a value
 * above the replicas when it is set or changed.
 */
import { Validated } from '@opkit/runtime/crd';
import { type Static, Type } from '@sinclair/typebox';
import { maxUnavailableRule, PodFields, Replicas, AppServiceStatus as StatusV1alpha1 } from '../v1alpha1/schema.ts';

/** The status is the same in both versions. */
export const AppServiceStatus = StatusV1alpha1;

export const PodTemplate = Type.Object(PodFields, {
  description: 'The pod each replica runs.',
  default: { image: 'busybox' },
});

export const Rollout = Type.Object(
  {
    maxUnavailable: Type.Integer({
      minimum: 1,
      format: 'int32',
      description: 'During an image or template change, how many pods may be unavailable at once.',
    }),
  },
  { description: 'How a template change rolls out (default: a quarter of the replicas at a time, at least 1).' },
);

export const AppServiceSpec = Validated(
  Type.Object(
    {
      replicas: Replicas,
      template: PodTemplate,
      rollout: Type.Optional(Rollout),
    },
    { description: 'What to run.' },
  ),
  [maxUnavailableRule('rollout.maxUnavailable')],
);

export type AppServiceSpec = Static<typeof AppServiceSpec>;
export type AppServiceStatus = Static<typeof AppServiceStatus>;
export type PodTemplate = Static<typeof PodTemplate>;
