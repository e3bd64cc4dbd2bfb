import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TestenvError } from './errors.ts';
import { waitFor } from './wait.ts';

test('waitFor resolves with the first value, and times out as WaitTimeout naming what and the last error', async () => {
  let calls = 0;
  assert.equal(await waitFor('the third call', async () => (++calls >= 3 ? calls : undefined), 1_000, 1), 3);
  const last = new TestenvError('ApiRequestFailed', 'still refused');
  await assert.rejects(
    waitFor(
      'a thing that never comes',
      async () => {
        throw last;
      },
      20,
      5,
    ),
    (err) =>
      err instanceof TestenvError &&
      err.code === 'WaitTimeout' &&
      err.cause === last &&
      /timed out after 20 ms waiting for a thing that never comes: TestenvError: still refused/.test(err.message),
  );
});
