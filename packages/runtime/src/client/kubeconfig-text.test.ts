import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KubeconfigError } from './kubeconfig.ts';
import { kubeconfigFromText } from './kubeconfig-text.ts';

const text = (user: Record<string, unknown>, cluster: Record<string, unknown> = {}) =>
  JSON.stringify({
    clusters: [{ name: 'c', cluster: { server: 'https://eu-1.example.com:6443/', ...cluster } }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'ctx', context: { cluster: 'c', user: 'u', namespace: 'team-ü' } }],
    'current-context': 'ctx',
  });

test('an embedded kubeconfig gives its server, CA, namespace and bearer token', async () => {
  const ca = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64');
  const c = kubeconfigFromText(text({ token: 's3cr3t' }, { 'certificate-authority-data': ca }), {
    source: 'Secret a/b',
  });
  assert.equal(c.server, 'https://eu-1.example.com:6443');
  assert.equal(c.namespace, 'team-ü');
  assert.equal(c.ca, '-----BEGIN CERTIFICATE-----\n');
  const auth = await c.auth.credentials();
  assert.equal(auth.headers.authorization, 'Bearer s3cr3t');
});

test('what would reach the operator’s machine is refused, naming the source and field, never the credential', () => {
  const cases: [Record<string, unknown>, Record<string, unknown>, string][] = [
    [{ tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }, {}, 'users[u].tokenFile'],
    [{ exec: { command: 'sh', apiVersion: 'client.authentication.k8s.io/v1' } }, {}, 'users[u].exec'],
    [{ 'client-certificate': 'c.pem', 'client-key': 'k.pem' }, {}, 'users[u].client-certificate'],
    [{ token: 'not-in-the-message' }, { 'certificate-authority': '/etc/ca.pem' }, 'clusters[c].certificate-authority'],
  ];
  for (const [user, cluster, field] of cases) {
    assert.throws(
      () => kubeconfigFromText(text(user, cluster), { source: 'Secret fleet/eu-1-kubeconfig, key value' }),
      (e: unknown) =>
        e instanceof KubeconfigError &&
        e.message.startsWith(`Secret fleet/eu-1-kubeconfig, key value: ${field} names a file or a command`) &&
        !e.message.includes('not-in-the-message'),
      field,
    );
  }
  // a kubeconfig the operator's own admin wrote may name files
  const own = kubeconfigFromText(text({ tokenFile: 'token' }), {
    source: '/etc/fleet/eu-1.kubeconfig',
    embeddedOnly: false,
  });
  assert.equal(own.server, 'https://eu-1.example.com:6443');
});

test('text that is not a kubeconfig is refused, naming the source', () => {
  assert.throws(
    () => kubeconfigFromText('a: [', { source: 'Secret x/y' }),
    /^KubeconfigError: Secret x\/y is not valid YAML|Secret x\/y is not valid YAML/,
  );
  assert.throws(() => kubeconfigFromText('- 1', { source: 'Secret x/y' }), /Secret x\/y is not a kubeconfig/);
  assert.throws(
    () => kubeconfigFromText(text({ token: 't' }), { source: 'Secret x/y', context: 'nope' }),
    /Secret x\/y: context "nope" is not defined/,
  );
});
