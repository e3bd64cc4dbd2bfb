import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { isDroppedConnection, linked, saysWhenToRetry } from './requests.ts';

test('linked aborts with the reason made of the first source that aborts, and dispose() lets go of every source', () => {
  const long = new AbortController(); // a controller's signal: it outlives many requests
  const short = new AbortController();
  const cut = linked([long.signal, short.signal, undefined, long.signal], (cause, source) => ({
    cause,
    from: source === long.signal ? 'long' : 'short',
  }));
  assert.equal(getEventListeners(long.signal, 'abort').length, 1, 'one listener per source, duplicates merged');
  short.abort('gone');
  assert.deepEqual(cut.signal.reason, { cause: 'gone', from: 'short' });
  cut.dispose();
  assert.equal(getEventListeners(long.signal, 'abort').length, 0, 'nothing stays on the long-lived signal');
  assert.equal(getEventListeners(short.signal, 'abort').length, 0);

  const before = linked([AbortSignal.abort('already')], (cause) => `cut: ${String(cause)}`);
  assert.equal(before.signal.aborted, true, 'an aborted source aborts it at once');
  assert.equal(before.signal.reason, 'cut: already');
  before.dispose();
});

test('isDroppedConnection: a connection that broke before any answer, by its Node error code', () => {
  const errno = (code: string) => Object.assign(new Error(code), { code });
  for (const code of ['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ECONNABORTED'])
    assert.equal(isDroppedConnection(errno(code)), true, code);
  for (const err of [
    errno('ENOTFOUND'),
    errno('ERR_TLS_CERT_ALTNAME_INVALID'),
    new Error('ECONNRESET'),
    'ECONNRESET',
    undefined,
  ])
    assert.equal(isDroppedConnection(err), false, String(err));
});

test('saysWhenToRetry: 429 always, 500–504 only with a Retry-After', () => {
  assert.equal(saysWhenToRetry(429, undefined), true);
  assert.equal(saysWhenToRetry(503, 0), true);
  assert.equal(saysWhenToRetry(500, 2), true);
  assert.equal(saysWhenToRetry(500, undefined), false);
  assert.equal(saysWhenToRetry(505, 1), false);
  assert.equal(saysWhenToRetry(409, 1), false);
  assert.equal(saysWhenToRetry(0, undefined), false, 'no answer at all');
});
