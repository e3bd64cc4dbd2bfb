import assert from 'node:assert/strict';
import { test } from 'node:test';
import { selfSignedCertificate } from './issue.ts';
import { CertificateError, checkKeyPair, secureContextOptions } from './keypair.ts';

const pair = selfSignedCertificate(['localhost']);

test('checkKeyPair names the origin and tells a bad PEM from a key of another certificate', () => {
  const other = selfSignedCertificate(['localhost']);
  assert.throws(() => checkKeyPair({ certPem: pair.certPem, keyPem: other.keyPem }, 'dir/tls.crt'), {
    name: 'CertificateError',
    code: 'KeyMismatch',
    message: 'dir/tls.crt: the private key does not belong to the certificate',
  });
  assert.throws(
    () => checkKeyPair({ certPem: 'nonsense', keyPem: pair.keyPem }, 'dir/tls.crt'),
    (err: unknown) => err instanceof CertificateError && err.code === 'CertificateInvalid' && err.cause !== undefined,
  );
  assert.throws(() => checkKeyPair({ certPem: pair.certPem, keyPem: 'nonsense' }, 'x'), {
    code: 'CertificateInvalid',
    message: 'x: not a PEM private key',
  });
});

test('every secure context is served with TLS 1.2 as the minimum', () => {
  assert.deepEqual(secureContextOptions(pair), { cert: pair.certPem, key: pair.keyPem, minVersion: 'TLSv1.2' });
});
