import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { KubeconfigError, loadConfig, loadInCluster } from './kubeconfig.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'opkit-kubeconfig-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

test('current context: server, CA data, bearer token and the context namespace', async () => {
  const path = await file(
    'a.yaml',
    `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: { server: "https://10.1.2.3:6443/", certificate-authority-data: ${b64('CA-PEM')} }
users:
- name: u1
  user: { token: secret-token }
contexts:
- name: dev
  context: { cluster: c1, user: u1, namespace: team-a }
`,
  );
  const cfg = await loadConfig({ path });
  assert.equal(cfg.server, 'https://10.1.2.3:6443');
  assert.equal(cfg.ca, 'CA-PEM');
  assert.equal(cfg.namespace, 'team-a');
  assert.equal(cfg.contextName, 'dev');
  assert.deepEqual((await cfg.auth.credentials()).headers, { authorization: 'Bearer secret-token' });
});

test('$KUBECONFIG lists files: the first to define a name wins; other contexts can be chosen; files are relative', async () => {
  await mkdir(join(dir, 'certs'), { recursive: true });
  await writeFile(join(dir, 'certs', 'client.crt'), 'CERT');
  await writeFile(join(dir, 'certs', 'client.key'), 'KEY');
  const first = await file(
    'first.yaml',
    `current-context: one
contexts:
- { name: one, context: { cluster: shared, user: certuser } }
- { name: two, context: { cluster: other, user: basic } }
users:
- name: certuser
  user: { client-certificate: certs/client.crt, client-key: certs/client.key }
clusters:
- { name: shared, cluster: { server: "https://first:1" } }
`,
  );
  const second = await file(
    'second.yaml',
    `current-context: ignored
clusters:
- { name: shared, cluster: { server: "https://second:2" } }
- { name: other, cluster: { server: "https://other:3", insecure-skip-tls-verify: true } }
users:
- { name: basic, user: { username: ann, password: pw } }
`,
  );
  const env = { KUBECONFIG: `${first}:${join(dir, 'missing.yaml')}:${second}` };
  const one = await loadConfig({ env });
  assert.equal(one.server, 'https://first:1');
  assert.equal(one.namespace, 'default');
  const creds = await one.auth.credentials();
  assert.equal(creds.cert, 'CERT');
  assert.equal(creds.key, 'KEY');
  const two = await loadConfig({ env, context: 'two' });
  assert.equal(two.server, 'https://other:3');
  assert.equal(two.insecureSkipTlsVerify, true);
  assert.equal((await two.auth.credentials()).headers.authorization, `Basic ${b64('ann:pw')}`);
});

test('exec credential plugins run with KUBERNETES_EXEC_INFO, and their token is cached until it expires', async () => {
  const counter = join(dir, 'exec-count');
  const script = await file(
    'plugin.sh',
    `#!/bin/sh
echo x >> "${counter}"
case "$KUBERNETES_EXEC_INFO" in *ExecCredential*) ;; *) exit 3 ;; esac
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-'"$TOKEN_PREFIX"'","expirationTimestamp":"2999-01-01T00:00:00Z"}}'
`,
  );
  await chmod(script, 0o755);
  const path = await file(
    'exec.yaml',
    `current-context: x
contexts: [{ name: x, context: { cluster: c, user: e } }]
clusters: [{ name: c, cluster: { server: "https://s:1" } }]
users:
- name: e
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ${script}
      env: [{ name: TOKEN_PREFIX, value: plugin }]
`,
  );
  const cfg = await loadConfig({ path });
  const [a, b] = await Promise.all([cfg.auth.credentials(), cfg.auth.credentials()]);
  assert.equal(a.headers.authorization, 'Bearer from-plugin');
  assert.equal(b.headers.authorization, 'Bearer from-plugin');
  const { readFile } = await import('node:fs/promises');
  assert.equal((await readFile(counter, 'utf8')).trim().split('\n').length, 1, 'one run for concurrent callers');
  cfg.auth.invalidate();
  await cfg.auth.credentials();
  assert.equal((await readFile(counter, 'utf8')).trim().split('\n').length, 2, 'invalidate() runs it again');
});

test('tokenFile is read from disk (and re-read after invalidate)', async () => {
  const token = await file('token', 'one\n');
  const path = await file(
    'tf.yaml',
    `current-context: x
contexts: [{ name: x, context: { cluster: c, user: t } }]
clusters: [{ name: c, cluster: { server: "https://s:1" } }]
users: [{ name: t, user: { tokenFile: token } }]
`,
  );
  const cfg = await loadConfig({ path });
  assert.equal((await cfg.auth.credentials()).headers.authorization, 'Bearer one');
  await writeFile(token, 'two\n');
  cfg.auth.invalidate();
  assert.equal((await cfg.auth.credentials()).headers.authorization, 'Bearer two');
});

test('in-cluster: the service account token, CA and namespace', async () => {
  const sa = join(dir, 'sa');
  await mkdir(sa, { recursive: true });
  await writeFile(join(sa, 'token'), 'sa-token');
  await writeFile(join(sa, 'ca.crt'), 'SA-CA');
  await writeFile(join(sa, 'namespace'), 'ops\n');
  const cfg = loadInCluster({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, sa);
  assert.equal(cfg.server, 'https://10.0.0.1:443');
  assert.equal(cfg.namespace, 'ops');
  assert.equal(cfg.ca, 'SA-CA');
  assert.equal((await cfg.auth.credentials()).headers.authorization, 'Bearer sa-token');
  assert.throws(() => loadInCluster({}, sa), KubeconfigError);
});

test('bad kubeconfigs fail with an error naming the file and what to fix', async () => {
  const cases: [string, string, RegExp][] = [
    ['bad.yaml', 'clusters: [oops', /not valid YAML/],
    ['list.yaml', '- a\n- b\n', /not a kubeconfig/],
    ['nocontext.yaml', 'clusters: []\n', /no current-context/],
    ['undefined-ctx.yaml', 'current-context: x\ncontexts: []\n', /context "x" is not defined/],
    [
      'noserver.yaml',
      'current-context: x\ncontexts: [{ name: x, context: { cluster: c } }]\nclusters: [{ name: c, cluster: {} }]\n',
      /cluster "c" has no server/,
    ],
    [
      'missing-cert.yaml',
      'current-context: x\ncontexts: [{ name: x, context: { cluster: c, user: u } }]\nclusters: [{ name: c, cluster: { server: "https://s" } }]\nusers: [{ name: u, user: { client-certificate: nope.crt, client-key: nope.key } }]\n',
      /users\[u\]\.client-certificate names .*nope\.crt/,
    ],
  ];
  for (const [name, text, message] of cases) {
    const path = await file(name, text);
    await assert.rejects(
      loadConfig({ path }),
      (e) => e instanceof KubeconfigError && message.test(e.message) && e.message.includes(name),
    );
  }
  await assert.rejects(loadConfig({ path: join(dir, 'absent.yaml') }), /cannot read the kubeconfig/);
});
