import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Client } from '../client/client.ts';
import { silentLogger } from '../logger.ts';
import { selfSignedCertificate } from '../tls/issue.ts';
import { MetricsAuthError } from './metricsauth.ts';
import { metricsBindAddress, metricsServer, metricsServingFlags } from './metricsserving.ts';
import { settingsFromArgs } from './settings.ts';

test('secure by default on :8443; plain HTTP on :8080 only when asked', () => {
  assert.equal(metricsBindAddress({}), ':8443');
  assert.equal(metricsBindAddress({ secure: false }), ':8080');
  assert.equal(metricsBindAddress({ secure: false, bindAddress: ':9090' }), ':9090');
});

test('kubebuilder flag forms: --metrics-secure, --metrics-secure=false, --metrics-secure false, and the variables', () => {
  assert.deepEqual(metricsServingFlags(['--metrics-secure', '--leader-elect'], {}), {
    rest: ['--leader-elect'],
    options: { secure: true },
  });
  assert.deepEqual(metricsServingFlags(['--metrics-secure=false'], {}).options, { secure: false });
  assert.deepEqual(metricsServingFlags(['--metrics-secure', 'false'], {}).options, { secure: false });
  assert.deepEqual(metricsServingFlags([], { METRICS_SECURE: 'false' }).options, { secure: false });
  assert.deepEqual(
    metricsServingFlags(
      ['--metrics-cert-path=/certs', '--metrics-cert-name', 'a.crt', '--metrics-cert-key', 'a.key'],
      {},
    ).options,
    { certDir: '/certs', certName: 'a.crt', keyName: 'a.key' },
  );
  assert.equal(
    metricsServingFlags(['--metrics-secure=maybe'], {}).problem,
    '--metrics-secure: "maybe" is not true or false',
  );
  assert.equal(
    metricsServingFlags(['--metrics-cert-name=x'], {}).problem,
    '--metrics-cert-name needs --metrics-cert-path (the directory the file is in)',
  );
  assert.equal(
    metricsServingFlags([], { METRICS_CERT_KEY: 'k' }).problem,
    'METRICS_CERT_KEY needs METRICS_CERT_PATH (the directory the file is in)',
    'the variable that was set is named, not a flag',
  );
  assert.equal(
    metricsServingFlags([], { METRICS_SECURE: 'false', METRICS_CERT_PATH: '/certs' }).problem,
    'METRICS_CERT_PATH needs secure metrics, but METRICS_SECURE is false',
  );
  assert.equal(
    metricsServingFlags(['--metrics-secure=false'], { METRICS_CERT_PATH: '/certs' }).problem,
    'METRICS_CERT_PATH needs secure metrics, but --metrics-secure is false',
  );
  assert.match(metricsServingFlags(['--metrics-cert-path'], {}).problem ?? '', /--metrics-cert-path needs a value/);
});

test('settingsFromArgs merges the metrics-serving flags with the bind address', () => {
  const s = settingsFromArgs({ name: 'op' }, ['--metrics-secure=false', '--metrics-bind-address', ':9090'], {});
  assert.deepEqual(s.metrics, { secure: false, bindAddress: ':9090' });
  assert.throws(() => settingsFromArgs({ name: 'op' }, ['--metrics-secure=perhaps'], {}), {
    code: 'InvalidSetting',
    message: '--metrics-secure: "perhaps" is not true or false',
  });
});

test("a certificate directory whose key is not the certificate's fails with CertificateUnreadable naming both files", async () => {
  const pair = selfSignedCertificate(['localhost']);
  const dir = await mkdtemp(join(tmpdir(), 'opkit-cert-'));
  const client = new Client({
    server: 'http://127.0.0.1:1',
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
  const endpoint = { path: '/metrics', handle: async () => ({ status: 200, contentType: 'text/plain', body: '' }) };
  try {
    await writeFile(join(dir, 'tls.crt'), pair.certPem);
    await writeFile(join(dir, 'tls.key'), selfSignedCertificate(['localhost']).keyPem);
    await assert.rejects(
      metricsServer({ bindAddress: '127.0.0.1:0', certDir: dir }, endpoint, { client, log: silentLogger }),
      (err: Error & { code?: string }) => {
        assert.ok(err instanceof MetricsAuthError);
        assert.equal(err.code, 'CertificateUnreadable');
        assert.equal(
          err.message,
          `${join(dir, 'tls.key')} and ${join(dir, 'tls.crt')}: the private key does not belong to the certificate — ` +
            'to serve a self-signed certificate instead, leave the certificate path unset',
        );
        return true;
      },
    );
  } finally {
    client.close();
    await rm(dir, { recursive: true, force: true });
  }
});
