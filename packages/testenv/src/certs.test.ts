import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createPki } from './certs.ts';

const CLIENTS = [{ name: 'admin', user: 'opkit-admin', groups: ['system:masters'] }];

test('the PKI is made once and copied into each later run directory; a set without its marker is not used', async () => {
  const root = await mkdtemp(join(tmpdir(), 'opkit-pki-'));
  try {
    const cache = join(root, 'cache');
    const dirs = await Promise.all(['a', 'b', 'c'].map((d) => mkdtemp(join(root, `${d}-`))));
    const first = await createPki(dirs[0] as string, CLIENTS, cache);
    const [set] = await readdir(cache);
    assert.match(set ?? '', /^pki-[0-9a-f]{16}$/);
    assert.ok((await readdir(join(cache, set as string))).includes('complete'));
    const second = await createPki(dirs[1] as string, CLIENTS, cache);
    assert.equal(second.ca.certPem, first.ca.certPem, 'the cached CA');
    assert.equal(second.clients.admin?.keyPem, first.clients.admin?.keyPem);
    assert.equal(second.ca.certFile, join(dirs[1] as string, 'ca.crt'), "in the run directory's own copy");
    assert.equal((await stat(second.serving.keyFile)).mode & 0o777, 0o600);
    assert.deepEqual(
      (await readdir(dirs[1] as string)).sort(),
      (await readdir(join(cache, set as string))).filter((f) => f !== 'complete').sort(),
    );
    await rm(join(cache, set as string, 'complete'));
    const third = await createPki(dirs[2] as string, CLIENTS, cache);
    assert.notEqual(third.ca.certPem, first.ca.certPem, 'an incomplete set is made anew (and replaces it)');
    const blocked = join(root, 'not-a-dir');
    await writeFile(blocked, '');
    const fourth = await createPki(await mkdtemp(join(root, 'd-')), CLIENTS, blocked);
    assert.match(fourth.ca.certPem, /BEGIN CERTIFICATE/, 'a cache that cannot be written only means no reuse');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
