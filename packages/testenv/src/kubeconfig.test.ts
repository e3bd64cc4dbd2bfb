import assert from 'node:assert/strict';
import { test } from 'node:test';
import { makeKubeconfig } from './kubeconfig.ts';

test('makeKubeconfig embeds the CA and certificate credentials base64-encoded', () => {
  const k = makeKubeconfig({
    name: 'c',
    server: 'https://127.0.0.1:6443',
    caPem: 'CA',
    user: 'u',
    credentials: { kind: 'certificate', certPem: 'CERT', keyPem: 'KEY' },
  });
  assert.equal(k['current-context'], 'c');
  assert.equal(k.clusters[0]?.cluster['certificate-authority-data'], Buffer.from('CA').toString('base64'));
  assert.equal(k.users[0]?.user['client-certificate-data'], Buffer.from('CERT').toString('base64'));
  assert.equal(k.contexts[0]?.context.namespace, undefined);
});

test('makeKubeconfig with a token sets the namespace of the context', () => {
  const k = makeKubeconfig({
    name: 'c',
    server: 's',
    caPem: 'CA',
    user: 'system:serviceaccount:ns:sa',
    namespace: 'ns',
    credentials: { kind: 'token', token: 'T' },
  });
  assert.deepEqual(k.users[0]?.user, { token: 'T' });
  assert.equal(k.contexts[0]?.context.namespace, 'ns');
});
