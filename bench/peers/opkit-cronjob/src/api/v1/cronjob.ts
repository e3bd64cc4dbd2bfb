/**
 * The CronJob API (`batch.tutorial.kubebuilder.io/v1`): the kubebuilder book's CronJob, in TypeBox. This schema is
 * the single source of the CustomResourceDefinition (`opkit generate`) and of the TypeScript types.
 *
 * `jobTemplate` is a whole batch/v1 JobTemplateSpec. The CRD keeps it as given (`x-kubernetes-preserve-unknown-fields`)
 * and types it as the built-in kind's; the apiserver validates it when the controller creates the Job from it.
 */
import { Defaulted, defineKind, type ObjectOf } from '@opkit/runtime';
import { ConditionsSchema } from '@opkit/runtime/crd';
import type { JobTemplateSpec, ObjectReference } from '@opkit/runtime/kinds';
import { type Static, Type } from '@sinclair/typebox';

export const ConcurrencyPolicy = Type.Union([Type.Literal('Allow'), Type.Literal('Forbid'), Type.Literal('Replace')], {
  description:
    'How to treat a run that is due while the last one still runs: Allow both, Forbid (skip the new one), or Replace ' +
    '(delete the running Job first).',
});

export const CronJobSpec = Type.Object(
  {
    schedule: Type.String({ minLength: 1, description: 'The schedule in Cron format (five fields, UTC).' }),
    startingDeadlineSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        format: 'int64',
        description: 'A run missed by more than this many seconds is skipped.',
      }),
    ),
    concurrencyPolicy: Defaulted(ConcurrencyPolicy, 'Allow'),
    suspend: Type.Optional(Type.Boolean({ description: 'True: no further runs start; the running ones go on.' })),
    jobTemplate: Type.Unsafe<JobTemplateSpec>(
      Type.Object(
        {},
        { 'x-kubernetes-preserve-unknown-fields': true, description: 'The Job each run creates (batch/v1).' },
      ),
    ),
    successfulJobsHistoryLimit: Type.Optional(
      Type.Integer({ minimum: 0, format: 'int32', description: 'Finished Jobs to keep (default 3, by the webhook).' }),
    ),
    failedJobsHistoryLimit: Type.Optional(
      Type.Integer({ minimum: 0, format: 'int32', description: 'Failed Jobs to keep (default 1, by the webhook).' }),
    ),
  },
  { description: 'The desired state of a CronJob.' },
);

const ObjectRef = Type.Unsafe<ObjectReference>(
  Type.Object(
    {
      apiVersion: Type.Optional(Type.String()),
      kind: Type.Optional(Type.String()),
      name: Type.Optional(Type.String()),
      namespace: Type.Optional(Type.String()),
      uid: Type.Optional(Type.String()),
      resourceVersion: Type.Optional(Type.String()),
    },
    { description: 'A reference to a Job.' },
  ),
);

export const CronJobStatus = Type.Object(
  {
    active: Type.Optional(Type.Array(ObjectRef, { description: 'The Jobs running now.' })),
    lastScheduleTime: Type.Optional(
      Type.String({ format: 'date-time', description: 'When the last run was scheduled.' }),
    ),
    conditions: Type.Optional(ConditionsSchema),
  },
  { description: 'The observed state of a CronJob.' },
);

export const CronJobs = defineKind({
  group: 'batch.tutorial.kubebuilder.io',
  version: 'v1',
  kind: 'CronJob',
  plural: 'cronjobs',
  scope: 'Namespaced',
  spec: CronJobSpec,
  status: CronJobStatus,
  subresources: { status: true },
  printerColumns: [
    { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
    { name: 'Last Schedule', type: 'date', jsonPath: '.status.lastScheduleTime' },
  ],
});

export type CronJobSpec = Static<typeof CronJobSpec>;
export type CronJobStatus = Static<typeof CronJobStatus>;
export type CronJob = ObjectOf<typeof CronJobs>;
