import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { authProviderAuth, CLIENT_NODE } from './auth.ts';
import { KubeconfigError, loadConfig } from './kubeconfig.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'opkit-auth-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** An unsigned JWT that expires in an hour: what an oidc auth-provider's `id-token` holds. */
function idToken(): string {
  const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub: 'me', exp: Math.floor(Date.now() / 1000) + 3600 })}.`;
}

const kubeconfig = (token: string) => `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: { server: "https://127.0.0.1:6443" }
users:
- name: legacy
  user:
    auth-provider:
      name: oidc
      config: { client-id: opkit, id-token: "${token}", idp-issuer-url: "https://issuer.invalid" }
contexts:
- name: dev
  context: { cluster: c1, user: legacy }
`;

test('a legacy auth-provider user is delegated to @kubernetes/client-node, loaded on demand', async () => {
  const token = idToken();
  const path = join(dir, 'oidc.yaml');
  await writeFile(path, kubeconfig(token));
  const config = await loadConfig({ path });
  const creds = await config.auth.credentials();
  assert.equal(creds.headers.authorization, `Bearer ${token}`);
});

test('without @kubernetes/client-node, an auth-provider user fails with AuthProviderNotInstalled naming the package', () => {
  const docs = [{ raw: kubeconfig(idToken()) }];
  const err = (() => {
    try {
      authProviderAuth(docs, 'dev', 'k.yaml: users[legacy].auth-provider', () => false);
    } catch (e) {
      return e;
    }
    return undefined;
  })();
  assert.ok(err instanceof KubeconfigError);
  assert.equal(err.code, 'AuthProviderNotInstalled');
  assert.match(err.message, /k\.yaml: users\[legacy\]\.auth-provider/);
  assert.match(err.message, new RegExp(`npm install ${CLIENT_NODE}`));
});
