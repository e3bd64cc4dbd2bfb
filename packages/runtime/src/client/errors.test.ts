import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, isNotFound, toApiError } from './errors.ts';

test('codes come from the Status reason, else from the HTTP status; causes and Retry-After are kept', () => {
  const invalid = ApiError.fromResponse(
    422,
    {
      kind: 'Status',
      reason: 'Invalid',
      message: 'bad',
      details: { causes: [{ field: 'spec.replicas', message: 'must be >= 0' }] },
    },
    'POST /x',
  );
  assert.equal(invalid.code, 'Invalid');
  assert.equal(invalid.causes[0]?.field, 'spec.replicas');
  assert.equal(invalid.message, 'POST /x: bad');
  const expired = ApiError.fromResponse(410, { kind: 'Status', reason: 'Expired', message: 'too old' }, 'GET /y');
  assert.equal(expired.code, 'Gone');
  const throttled = ApiError.fromResponse(429, 'slow down', 'GET /z', '7');
  assert.equal(throttled.code, 'TooManyRequests');
  assert.equal(throttled.retryAfterSeconds, 7);
  assert.equal(throttled.retryable, true);
  assert.equal(ApiError.fromResponse(404, '', 'GET /n').code, 'NotFound');
  assert.ok(isNotFound(ApiError.fromResponse(404, '', 'GET /n')));
  assert.equal(ApiError.fromResponse(418, '', 'GET /t').code, 'Unknown');
  const wrapped = toApiError(new Error('boom'));
  assert.equal(wrapped.code, 'Unknown');
  assert.ok(wrapped.cause instanceof Error);
});
