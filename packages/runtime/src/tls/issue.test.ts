import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { createCertificateAuthority, issueServingCertificate, selfSignedCertificate } from './issue.ts';
import { checkKeyPair } from './keypair.ts';

test('a self-signed certificate names localhost and loopback, is for serving, lasts a year and matches its key', () => {
  const pair = selfSignedCertificate(['localhost', '127.0.0.1', '::1']);
  const x = checkKeyPair(pair, 'self-signed');
  assert.ok(x.checkHost('localhost'));
  assert.ok(x.checkIP('127.0.0.1'));
  assert.ok(x.checkIP('::1'));
  assert.equal(x.ca, false);
  assert.ok(x.verify(x.publicKey), 'signed by its own key');
  assert.ok(new Date(x.validTo).getTime() > Date.now() + 300 * 86_400_000);
  assert.ok(new Date(x.validFrom).getTime() <= Date.now() - 30_000, 'valid from a minute ago, for skewed clocks');
});

test('an issued serving certificate is signed by its CA, names its hosts, and is not itself a CA', () => {
  const ca = createCertificateAuthority('test-ca');
  const caCert = new X509Certificate(ca.certPem);
  assert.equal(caCert.ca, true);
  const pair = issueServingCertificate(ca, ['svc.ns.svc', '10.0.0.1'], { validityMs: 3_600_000 });
  const x = checkKeyPair(pair, 'issued');
  assert.ok(x.verify(caCert.publicKey));
  assert.equal(x.issuer, caCert.subject);
  assert.ok(x.checkHost('svc.ns.svc'));
  assert.ok(x.checkIP('10.0.0.1'));
  assert.equal(x.ca, false);
  assert.throws(() => issueServingCertificate(ca, []), /at least one host/);
});
