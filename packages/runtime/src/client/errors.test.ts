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

test("an Invalid error's field <nil> (a rule on the whole object without fieldPath) is explained, not printed raw", () => {
  const causes = [
    { reason: 'FieldValueInvalid', field: '<nil>', message: 'Invalid value: metadata.name must be short' },
    { reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'Invalid value: 200: at most 100' },
  ];
  const message = (text: string, c: readonly object[]) =>
    ApiError.fromResponse(422, { kind: 'Status', reason: 'Invalid', message: text, details: { causes: c } }, 'PUT /w')
      .message;
  assert.equal(
    message('Widget.test.opkit.dev "w" is invalid: <nil>: Invalid value: metadata.name must be short', causes),
    'PUT /w: Widget.test.opkit.dev "w" is invalid: (the object as a whole: a rule without fieldPath): Invalid value: ' +
      'metadata.name must be short',
  );
  assert.equal(
    message(
      'Widget.test.opkit.dev "w" is invalid: [spec.replicas: Invalid value: 200: at most 100, <nil>: Invalid value: x]',
      causes,
    ),
    'PUT /w: Widget.test.opkit.dev "w" is invalid: [spec.replicas: Invalid value: 200: at most 100, (the object as a ' +
      'whole: a rule without fieldPath): Invalid value: x]',
  );
  const refused = ApiError.fromResponse(
    422,
    {
      kind: 'Status',
      reason: 'Invalid',
      message: 'W "w" is invalid: [<nil>: Invalid value: x]',
      details: { causes },
    },
    'PUT /w',
  );
  assert.match(refused.message, /is invalid: \[\(the object as a whole: a rule without fieldPath\): Invalid value/);
  assert.equal(refused.causes[0]?.field, '<nil>', 'the causes stay as the apiserver sent them');
  // without such a cause, a message that happens to contain "<nil>: " is the server's
  const value = 'W "w" is invalid: spec.note: Invalid value: "<nil>: x": too long';
  assert.equal(message(value, [causes[1] as object]), `PUT /w: ${value}`);
});
