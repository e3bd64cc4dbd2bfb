// The CronJob webhooks on a real local control plane (@opkit/testenv, shared by the run's test files): the test manager
// serves them on loopback with a certificate of its own, the apiserver calls them, so a write shows the defaulted
// object or the refusal (an ApiError with the webhook's field causes) as kubectl would.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiError, type InputOf } from '@opkit/runtime';
import { startTestManager, type TestManager } from '@opkit/runtime/testing';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { CronJobs } from '../../src/api/v1/cronjob.ts';
import { cronjobWebhooks } from '../../src/webhooks/cronjob.ts';
import { permissions } from '../../src/webhooks.ts';

type CronJobSpec = InputOf<typeof CronJobs>['spec'];

let env: SharedEnvironment;
let op: TestManager;
before(async () => {
  env = await sharedEnvironment({ nodes: 0, log: () => {} }); // npm test's (test/setup.ts), or this file's own
  op = await startTestManager(env, {
    name: 'cronjob',
    kinds: [CronJobs],
    permissions,
    setup: () => {},
    webhooks: { admission: cronjobWebhooks() },
  });
});
after(async () => {
  try {
    await op?.stop(); // it removes the webhook configurations, then stops the manager
  } finally {
    await env?.release();
  }
});

const spec = (more: Partial<CronJobSpec> = {}): CronJobSpec => ({
  schedule: '*/5 * * * *',
  jobTemplate: {
    spec: { template: { spec: { containers: [{ name: 'c', image: 'busybox' }], restartPolicy: 'Never' } } },
  },
  ...more,
});
const create = (name: string, s: CronJobSpec) =>
  op.client.create(CronJobs, { metadata: { namespace: 'default', name }, spec: s });
const refusal = async (write: Promise<unknown>): Promise<ApiError> => {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApiError, `expected a refusal, got ${String(err)}`);
  return err;
};

/** The fields the defaulting webhook fills, as stored. */
const defaulted = async (name: string, more: Partial<CronJobSpec>) => {
  const { spec: s } = await create(name, spec(more));
  return [s.concurrencyPolicy, s.suspend, s.successfulJobsHistoryLimit, s.failedJobsHistoryLimit];
};

test('the defaulting webhook fills suspend and the history limits', async () => {
  assert.deepEqual(await defaulted('defaulted', {}), ['Allow', false, 3, 1]);
});

test('the defaulting webhook keeps what is given, zero included', async () => {
  const given: Partial<CronJobSpec> = {
    concurrencyPolicy: 'Forbid',
    suspend: true,
    successfulJobsHistoryLimit: 0,
    failedJobsHistoryLimit: 5,
  };
  assert.deepEqual(await defaulted('given', given), ['Forbid', true, 0, 5]);
});

test('a schedule that does not parse is refused, naming spec.schedule and why', async () => {
  const err = await refusal(create('bad-schedule', spec({ schedule: '61 * * * *' })));
  assert.equal(err.code, 'Invalid');
  assert.deepEqual(
    err.causes.map((c) => c.field),
    ['spec.schedule'],
  );
  assert.match(err.message, /minute/);
});

test('a name longer than 52 characters is refused (its Jobs add 11), naming metadata.name', async () => {
  await create('n'.repeat(52), spec());
  const err = await refusal(create('n'.repeat(53), spec()));
  assert.deepEqual(
    err.causes.map((c) => c.field),
    ['metadata.name'],
  );
});

test('every problem is named at once', async () => {
  const err = await refusal(create('m'.repeat(60), spec({ schedule: '* * *' })));
  assert.deepEqual(err.causes.map((c) => c.field).sort(), ['metadata.name', 'spec.schedule']);
});

test('an update to a schedule that does not parse is refused, and the stored CronJob keeps its own', async () => {
  await create('updated', spec());
  const ref = { namespace: 'default', name: 'updated' };
  const err = await refusal(op.client.patch(CronJobs, ref, { spec: { schedule: 'every day' } }));
  assert.deepEqual(
    err.causes.map((c) => c.field),
    ['spec.schedule'],
  );
  assert.equal((await op.client.get(CronJobs, ref)).spec.schedule, '*/5 * * * *');
});
