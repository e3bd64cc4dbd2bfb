import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError } from '../client/errors.ts';
import { UsageError } from '../errors.ts';
import { ReconcileTimeoutError } from './deadline.ts';
import { defaultErrorPolicy, type ErrorInfo, giveUp, retryAfter, retryWithBackoff } from './policy.ts';
import { type ReconcileContext, TerminalError } from './reconcile.ts';

const info = (stopping = false): ErrorInfo => ({
  request: { namespace: 'ns', name: 'a' },
  retries: 0,
  stopping,
  ctx: {} as ReconcileContext,
});

test('defaultErrorPolicy: the decision table of controller-runtime', () => {
  assert.deepEqual(
    { ...defaultErrorPolicy(new TerminalError('bad spec'), info()), message: undefined },
    { retry: 'never', terminal: true, log: 'error', message: undefined },
  );
  const conflict = defaultErrorPolicy(new ApiError('Conflict', 'changed', { status: 409 }), info());
  assert.equal(conflict.retry, 'backoff');
  assert.equal(conflict.log, 'debug', 'a conflict is normal under concurrency');
  const owned = defaultErrorPolicy(
    new ApiError('Conflict', 'Apply failed with 1 conflict', {
      status: 409,
      causes: [{ reason: 'FieldManagerConflict', message: 'conflict with "someone-else"', field: '.data.v' }],
    }),
    info(),
  );
  assert.deepEqual([owned.retry, owned.log], ['backoff', 'error'], "an unforced apply's conflict is not a stale read");
  const timedOut = defaultErrorPolicy(new ReconcileTimeoutError(1_000), info());
  assert.deepEqual([timedOut.retry, timedOut.log], ['backoff', 'warn']);
  assert.equal(defaultErrorPolicy(new ReconcileTimeoutError(1_000), info(true)).retry, 'never', 'a stop comes first');
  const throttled = defaultErrorPolicy(new ApiError('TooManyRequests', 'slow down', { retryAfterSeconds: 3 }), info());
  assert.equal(throttled.retry === 'after' && throttled.afterMs, 3_000, "the server's Retry-After");
  const noDelay = defaultErrorPolicy(new ApiError('TooManyRequests', 'slow down', { retryAfterSeconds: 0 }), info());
  assert.equal(noDelay.retry, 'backoff', 'no usable Retry-After: backoff');
  assert.equal(defaultErrorPolicy(new Error('aborted'), info(true)).retry, 'never', 'stopping: not retried');
  const other = defaultErrorPolicy(new Error('boom'), info());
  assert.deepEqual(other, { retry: 'backoff', log: 'error' });
});

test('action helpers check their delay and carry the log level', () => {
  assert.deepEqual(retryWithBackoff(), { retry: 'backoff', log: 'error' });
  assert.deepEqual(retryAfter(500), { retry: 'after', afterMs: 500, log: 'warn' });
  assert.deepEqual(giveUp('info', 'left alone'), { retry: 'never', log: 'info', message: 'left alone' });
  assert.throws(() => retryAfter(0), UsageError);
});
