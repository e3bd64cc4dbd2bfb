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

test('impersonation: as, as-uid, as-groups and as-user-extra are read; the others without as are refused', async () => {
  const path = await file(
    'as.yaml',
    `current-context: x
contexts: [{ name: x, context: { cluster: c, user: admin } }]
clusters: [{ name: c, cluster: { server: "https://s:1" } }]
users:
- name: admin
  user:
    token: t
    as: jane
    as-uid: "1234"
    as-groups: [devs, "system:authenticated"]
    as-user-extra: { scopes: [view, "déploy"] }
`,
  );
  const cfg = await loadConfig({ path });
  assert.deepEqual(cfg.impersonate, {
    user: 'jane',
    uid: '1234',
    groups: ['devs', 'system:authenticated'],
    extra: { scopes: ['view', 'déploy'] },
  });
  const bad = await file(
    'as-bad.yaml',
    `current-context: x
contexts: [{ name: x, context: { cluster: c, user: u } }]
clusters: [{ name: c, cluster: { server: "https://s:1" } }]
users: [{ name: u, user: { as-groups: [devs] } }]
`,
  );
  await assert.rejects(loadConfig({ path: bad }), /users\[u\]\.as-groups needs `as`/);
});

test('proxy-url wins; else HTTPS_PROXY applies unless NO_PROXY or a loopback server says otherwise', async () => {
  const kubeconfig = (name: string, server: string, proxy?: string) =>
    file(
      name,
      `current-context: x
contexts: [{ name: x, context: { cluster: c } }]
clusters: [{ name: c, cluster: { server: "${server}"${proxy ? `, proxy-url: "${proxy}"` : ''} } }]
`,
    );
  const env = { HTTPS_PROXY: 'http://corp-proxy:3128', NO_PROXY: '.internal,10.0.0.0/8' };
  const explicit = await loadConfig({
    path: await kubeconfig('p1.yaml', 'https://api.example:6443', 'socks5://s:1080'),
    env,
  });
  assert.equal(explicit.proxyUrl, 'socks5://s:1080');
  const fromEnv = await loadConfig({ path: await kubeconfig('p2.yaml', 'https://api.example:6443'), env });
  assert.equal(fromEnv.proxyUrl, 'http://corp-proxy:3128/');
  for (const server of ['https://k8s.internal:6443', 'https://10.1.2.3:6443', 'https://127.0.0.1:6443']) {
    const direct = await loadConfig({ path: await kubeconfig('p3.yaml', server), env });
    assert.equal(direct.proxyUrl, undefined, server);
  }
  await assert.rejects(
    loadConfig({ path: await kubeconfig('p4.yaml', 'https://a:1', 'ftp://x:21'), env }),
    /clusters\[c\]\.proxy-url: proxy scheme "ftp" is not supported/,
  );
});

test('a relative exec command is found beside the kubeconfig, whatever the working directory', async () => {
  const sub = join(dir, 'cfgdir');
  await mkdir(join(sub, 'bin'), { recursive: true });
  const plugin = join(sub, 'bin', 'cred.sh');
  await writeFile(
    plugin,
    `#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"beside"}}'
`,
  );
  await chmod(plugin, 0o755);
  const path = join(sub, 'config');
  await writeFile(
    path,
    `current-context: x
contexts: [{ name: x, context: { cluster: c, user: e } }]
clusters: [{ name: c, cluster: { server: "https://s:1" } }]
users: [{ name: e, user: { exec: { apiVersion: client.authentication.k8s.io/v1, command: ./bin/cred.sh } } }]
`,
  );
  const cwd = process.cwd();
  process.chdir(tmpdir());
  try {
    const cfg = await loadConfig({ path });
    assert.equal((await cfg.auth.credentials()).headers.authorization, 'Bearer beside');
  } finally {
    process.chdir(cwd);
  }
});

test('in a pod with KUBECONFIG unset, the service account wins over ~/.kube/config (as controller-runtime)', async () => {
  const home = join(dir, 'home');
  await mkdir(join(home, '.kube'), { recursive: true });
  await writeFile(
    join(home, '.kube', 'config'),
    `current-context: x
contexts: [{ name: x, context: { cluster: c } }]
clusters: [{ name: c, cluster: { server: "https://laptop:6443" } }]
`,
  );
  const sa = join(dir, 'sa2');
  await mkdir(sa, { recursive: true });
  await writeFile(join(sa, 'token'), 'sa-token');
  await writeFile(join(sa, 'ca.crt'), 'SA-CA');
  const savedHome = process.env.HOME;
  process.env.HOME = home;
  try {
    const env = { HOME: home, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const cfg = await loadConfig({ env, inClusterDir: sa });
    assert.equal(cfg.server, 'https://10.0.0.1:443');
    assert.equal(cfg.contextName, 'in-cluster');
    const local = await loadConfig({ env: { HOME: home } });
    assert.equal(local.server, 'https://laptop:6443', 'outside a pod, ~/.kube/config');
    const chosen = await loadConfig({ env: { ...env, KUBECONFIG: join(home, '.kube', 'config') }, inClusterDir: sa });
    assert.equal(chosen.server, 'https://laptop:6443', 'KUBECONFIG still wins');
  } finally {
    process.env.HOME = savedHome;
  }
});
