import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diskError } from './download.ts';

const errno = (code: string) => Object.assign(new Error(`${code}: failed`), { code });

test('a full disk and an unwritable cache are named as such, with what to do', () => {
  for (const code of ['ENOSPC', 'EDQUOT']) {
    const err = diskError(errno(code), '/cache/bin/x');
    assert.equal(err?.code, 'DiskFull');
    assert.match(err?.message ?? '', /no space left on the device holding \/cache\/bin\/x .*OPKIT_CACHE_DIR/);
  }
  for (const code of ['EACCES', 'EPERM', 'EROFS']) {
    const err = diskError(errno(code), '/cache/bin/x');
    assert.equal(err?.code, 'CacheNotWritable');
    assert.match(err?.message ?? '', /cannot write \/cache\/bin\/x .*not writable.*OPKIT_CACHE_DIR/);
  }
  assert.equal(diskError(errno('ECONNRESET'), '/x'), undefined);
  assert.equal(diskError(new Error('other'), '/x'), undefined);
});
