import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '@opkit/runtime';
import { acrossWebhookResets } from './resets.ts';

test('a harness write is sent again while a webhook connection reset fails it, and only then, 4 times at most', async () => {
  const reset = new ApiError(
    'InternalError',
    'conversion webhook for app.example.com/v1, Kind=AppService failed: Post "https://127.0.0.1:1/convert": write tcp: write: connection reset by peer',
    { status: 500 },
  );
  let calls = 0;
  const flaky = async () => {
    calls += 1;
    if (calls < 3) throw reset;
    return 'written';
  };
  assert.equal(await acrossWebhookResets(flaky), 'written');
  assert.equal(calls, 3);

  calls = 0;
  await assert.rejects(
    acrossWebhookResets(async () => {
      calls += 1;
      throw reset;
    }),
    (err) => err === reset,
  );
  assert.equal(calls, 4, 'gives up after 4 sends');

  calls = 0;
  const refused = new ApiError('Invalid', 'spec.replicas: Invalid value', { status: 422 });
  await assert.rejects(
    acrossWebhookResets(async () => {
      calls += 1;
      throw refused;
    }),
    (err) => err === refused,
  );
  assert.equal(calls, 1, 'any other failure is thrown at once');
});
