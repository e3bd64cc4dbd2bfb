// What the CustomResourceDefinition itself enforces, with no operator running: the apiserver refuses what the schema
// rules out, naming the field, and keeps the Job template as it was given.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import { Client } from '@opkit/runtime/client';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { CronJobs } from '../src/api/v1/cronjob.ts';

let env: SharedEnvironment;
let admin: Client;
before(async () => {
  env = await sharedEnvironment({ nodes: 0, log: () => {} });
  admin = await Client.create({ path: env.kubeconfigPath });
});
after(async () => {
  try {
    admin?.close();
  } finally {
    await env?.release();
  }
});

const jobTemplate = {
  metadata: { labels: { team: 'ops' } },
  spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Never' } } },
};
/** A create as kubectl would send it: any body, unchecked by TypeScript. */
const create = (name: string, spec: Record<string, unknown>) =>
  admin.create(CronJobs, { metadata: { namespace: 'default', name }, spec } as never);
async function refusedFields(name: string, spec: Record<string, unknown>): Promise<string[]> {
  const err = await create(name, spec).then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, `expected a refusal, got ${String(err)}`);
  return err.causes.map((c) => c.field ?? '');
}

test('a concurrencyPolicy outside Allow, Forbid and Replace is refused, naming it', async () => {
  assert.deepEqual(
    await refusedFields('policy', { schedule: '* * * * *', jobTemplate, concurrencyPolicy: 'Sometimes' }),
    ['spec.concurrencyPolicy'],
  );
});

test('negative deadlines and history limits are refused, each named', async () => {
  const fields = await refusedFields('negative', {
    schedule: '* * * * *',
    jobTemplate,
    startingDeadlineSeconds: -1,
    successfulJobsHistoryLimit: -1,
  });
  assert.deepEqual(fields.sort(), ['spec.startingDeadlineSeconds', 'spec.successfulJobsHistoryLimit']);
});

test('schedule and jobTemplate are required', async () => {
  assert.deepEqual((await refusedFields('empty', {})).sort(), ['spec.jobTemplate', 'spec.schedule']);
});

test('the Job template is stored as given, fields the schema does not name included; concurrencyPolicy defaults', async () => {
  const stored = await create('kept', { schedule: '* * * * *', jobTemplate });
  assert.deepEqual(stored.spec.jobTemplate, jobTemplate);
  assert.equal(stored.spec.concurrencyPolicy, 'Allow');
});
