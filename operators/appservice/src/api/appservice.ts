/**
 * @module api/appservice
 * The AppService kind with both versions: `v1alpha1` (served, deprecated) and `v1` (served, stored — the hub). The
 * conversions move the pod fields between the flat v1alpha1 spec and v1's `spec.template`, and `maxUnavailable`
 * to and from `spec.rollout`; they are total and lossless both ways (fuzzed by api/appservice.test.ts), so an
 * object written in either version reads back unchanged in either.
 *
 * The CRD (config/crd, generated) carries both schemas and the conversion webhook stanza; the operator serves
 * `/convert` (src/webhooks.ts).
 */
import { defineKind } from '@opkit/runtime';
import * as v1 from './v1/appservice.ts';
import * as v1alpha1 from './v1alpha1/schema.ts';

const common = {
  subresources: {
    status: true,
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  },
};
const columns = (imagePath: string) => [
  { name: 'Desired', type: 'integer' as const, jsonPath: '.spec.replicas', description: 'Pods wanted' },
  { name: 'Current', type: 'integer' as const, jsonPath: '.status.replicas', description: 'Pods counted' },
  { name: 'Ready', type: 'integer' as const, jsonPath: '.status.readyReplicas', description: 'Pods ready' },
  { name: 'Image', type: 'string' as const, jsonPath: imagePath },
  { name: 'Age', type: 'date' as const, jsonPath: '.metadata.creationTimestamp' },
];

export const AppServiceKind = defineKind({
  group: 'app.example.com',
  kind: 'AppService',
  plural: 'appservices',
  singular: 'appservice',
  shortNames: ['appsvc'],
  categories: ['all'],
  scope: 'Namespaced',
  storage: 'v1',
  versions: {
    v1alpha1: {
      spec: v1alpha1.AppServiceSpec,
      status: v1alpha1.AppServiceStatus,
      ...common,
      printerColumns: columns('.spec.image'),
      deprecationWarning: 'app.example.com/v1alpha1 AppService is deprecated; use app.example.com/v1',
    },
    v1: {
      spec: v1.AppServiceSpec,
      status: v1.AppServiceStatus,
      ...common,
      printerColumns: columns('.spec.template.image'),
    },
  },
  conversions: {
    v1alpha1: {
      toHub: ({ metadata, spec, status }) => {
        const { replicas, maxUnavailable, ...template } = spec;
        return {
          metadata,
          spec: { replicas, template, ...(maxUnavailable !== undefined ? { rollout: { maxUnavailable } } : {}) },
          ...(status !== undefined ? { status } : {}),
        };
      },
      fromHub: ({ metadata, spec, status }) => ({
        metadata,
        spec: {
          replicas: spec.replicas,
          ...spec.template,
          ...(spec.rollout !== undefined ? { maxUnavailable: spec.rollout.maxUnavailable } : {}),
        },
        ...(status !== undefined ? { status } : {}),
      }),
    },
  },
});

/** AppServices as v1 (the storage version). */
export const AppServicesV1 = AppServiceKind.versions.v1;
export type AppServiceV1 = typeof AppServicesV1 extends { _type?: infer T } ? NonNullable<T> : never;
