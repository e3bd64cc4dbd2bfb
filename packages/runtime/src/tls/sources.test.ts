import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { createCertificateAuthority, issueServingCertificate, selfSignedCertificate } from './issue.ts';
import { CertificateError } from './keypair.ts';
import { FileCertificates, StaticCertificates } from './sources.ts';

test('load() with an aborted signal rejects with the signal’s reason (an AbortError), for files and for a pair in memory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-sources-'));
  try {
    await assert.rejects(new FileCertificates({ dir }).load(AbortSignal.abort()), { name: 'AbortError' });
    const pair = issueServingCertificate(createCertificateAuthority('test-ca'), ['localhost']);
    await assert.rejects(new StaticCertificates(pair).load(AbortSignal.abort()), { name: 'AbortError' });
    assert.equal((await new StaticCertificates(pair).load(new AbortController().signal)).certPem, pair.certPem);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('StaticCertificates made empty (the test webhooks): CertificateMissing before a pair is handed, then it, checked', async () => {
  const source = new StaticCertificates();
  assert.throws(
    () => source.current(),
    (err: unknown) => err instanceof CertificateError && err.code === 'CertificateMissing',
  );
  const pair = selfSignedCertificate(['127.0.0.1']);
  const seen: unknown[] = [];
  source.onChange((p) => seen.push(p));
  source.update(pair);
  assert.equal(await source.load(), pair);
  assert.deepEqual(seen, [pair]);
  const other = selfSignedCertificate(['127.0.0.1']);
  assert.throws(() => source.update({ certPem: pair.certPem, keyPem: other.keyPem }), CertificateError);
});
