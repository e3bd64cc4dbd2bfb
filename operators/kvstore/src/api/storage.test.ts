import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareStorage, STORAGE_PATTERN, storageBytes } from './storage.ts';

test('storage sizes parse to bytes', () => {
  assert.equal(storageBytes('1Gi'), 1024n ** 3n);
  assert.equal(storageBytes('500Mi'), 500n * 1024n ** 2n);
  assert.equal(storageBytes('1G'), 10n ** 9n);
  assert.equal(storageBytes('1.5Gi'), 3n * 512n * 1024n ** 2n);
  assert.equal(storageBytes('0.1'), 1n, 'rounded up to a byte');
  assert.equal(storageBytes('128'), 128n);
  for (const bad of ['lots', '1gi', '-1Gi', '1e3', '', '1.Gi']) assert.equal(storageBytes(bad), undefined, bad);
});

test('sizes compare across suffixes, and the pattern agrees with the parser', () => {
  assert.equal(compareStorage('1Gi', '1024Mi'), 0);
  assert.equal(compareStorage('500Mi', '1Gi'), -1);
  assert.equal(compareStorage('1Gi', '1G'), 1);
  assert.equal(compareStorage('1Gi', 'lots'), undefined);
  const re = new RegExp(STORAGE_PATTERN);
  for (const s of ['1Gi', '1.5Gi', '10', 'lots', '1gi']) assert.equal(re.test(s), storageBytes(s) !== undefined, s);
});
