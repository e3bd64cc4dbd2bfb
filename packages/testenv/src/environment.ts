/**
 * @module environment
 * `start()` brings up a real control plane — etcd, kube-apiserver (TLS, client-certificate admin, RBAC,
 * service-account tokens), kube-controller-manager (garbage collector, namespaces, service accounts and tokens,
 * workload controllers), kube-scheduler and kwok with N fake nodes — and returns an `Environment`.
 *
 * Guarantees:
 * - Every environment has its own run directory and free ports; several run at once without interfering.
 * - `start()` resolves only when the apiserver is ready, every node is Ready and the `default` ServiceAccount exists
 *   (pods can be created); a failure names the component, its exit code and the tail of its log, and leaves nothing
 *   running.
 * - `stop()` ends every child process and removes the run directory. The components do not keep the owning process
 *   alive: a test process that ends without `stop()` (a failed test, an unhandled error) exits, SIGKILLs them on its
 *   way out, and its watchdog removes the run directory. If the owning process dies instead, the watchdog process
 *   ends the components; a later `start()` also reaps run directories whose owner is gone.
 * - With `keepDir`, the run directory is marked kept (a `KEPT` file) on stop, or by the watchdog if the owner dies:
 *   neither the watchdog nor a later `start()` in any process removes it; only the user does.
 * Caveats: the TaintNodesByCondition admission plugin is disabled (no node-lifecycle controller runs, so a new node's
 * not-ready taint would never be lifted); client rate limits of the controller-manager and scheduler are raised so
 * that benchmarks with tens of thousands of pods are not limited by them.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { ApiClient } from './api.ts';
import { type BinaryPaths, defaultLog, resolveBinaries } from './binaries.ts';
import { type CertPair, createPki, type Pki } from './certs.ts';
import { Component } from './component.ts';
import { isTestenvError, TestenvError } from './errors.ts';
import { type Kubeconfig, makeKubeconfig, writeKubeconfig } from './kubeconfig.ts';
import { KEPT_MARKER, KEPT_TEXT, runRoot } from './paths.ts';
import { freePorts } from './ports.ts';
import { isProcessAlive } from './process.ts';
import { type InstalledWebhooks, type InstallWebhooksOptions, installWebhooks } from './webhooks.ts';

/** How `start()` builds the control plane; every field has a default. */
export interface StartOptions {
  /** Number of kwok fake nodes (default 3). */
  readonly nodes?: number;
  /** Pod capacity of each fake node (default 110, the kubelet's default). */
  readonly podsPerNode?: number;
  /** Directory holding every binary; else KUBEBUILDER_ASSETS, the cache, a download or a build (see binaries.ts). */
  readonly binaryDir?: string;
  /** Build with Go, when it is found, the binaries that could not be downloaded (default true). */
  readonly build?: boolean;
  /** Run directory to create (must not exist or be empty); default: a fresh directory under the OS temp dir. */
  readonly dir?: string;
  /** Keep the run directory after `stop()` (logs, etcd data) for inspection (default false). */
  readonly keepDir?: boolean;
  /** Time each component gets to become ready (default 60 s). */
  readonly startTimeoutMs?: number;
  /** Write the apiserver audit log (level Metadata, JSON lines) to `<dir>/audit.log` (default false). */
  readonly auditLog?: boolean;
  /** Extra kube-apiserver flags, e.g. `--feature-gates=...`. */
  readonly apiserverArgs?: readonly string[];
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

/** The components of an environment, as `restart`, `stopComponent` and `startComponent` name them. */
export type ComponentId = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kwok';

/** The ServiceAccount `kubeconfigFor` authenticates as. */
export interface ServiceAccountRef {
  /** The ServiceAccount's name. */
  readonly name: string;
  /** Default `default`. */
  readonly namespace?: string;
  /** Token lifetime (default 24 h). */
  readonly expirationSeconds?: number;
}

/** What `kubeconfigFor` made: a kubeconfig written to the run directory, and its token. */
export interface ServiceAccountKubeconfig {
  /** The kubeconfig file, `<dir>/kubeconfig-sa-<namespace>-<name>` (removed with the run directory). */
  readonly path: string;
  /** The same kubeconfig, parsed (its namespace is the ServiceAccount's). */
  readonly kubeconfig: Kubeconfig;
  /** The bound ServiceAccount token (a JWT, valid for `expirationSeconds`). */
  readonly token: string;
  /** The user name the apiserver sees: `system:serviceaccount:<namespace>:<name>`. */
  readonly user: string;
}

/** What `state.json` in the run directory records, for `opkit env status` and for reaping. */
export interface EnvironmentState {
  /** The process that started and owns the environment (see the module comment for what happens when it dies). */
  readonly ownerPid: number;
  /** The apiserver's URL, `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** The admin kubeconfig. */
  readonly kubeconfigPath: string;
  /** pid of each running component. */
  readonly pids: Partial<Record<ComponentId, number>>;
  /** The loopback ports in use: `etcdClient`, `etcdPeer`, `apiserver`, `kcm`, `scheduler`, `kwok`. */
  readonly ports: Readonly<Record<string, number>>;
  /** Number of fake nodes. */
  readonly nodes: number;
  /** When the state was last written (ISO 8601): at start, and after each component restart, stop or start. */
  readonly startedAt: string;
}

/** The kube-controller-manager controllers that run (canonical names). */
export const CONTROLLERS: readonly string[] = [
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'clusterrole-aggregation-controller',
  'replicaset-controller',
  'deployment-controller',
  'statefulset-controller',
  'daemonset-controller',
  'job-controller',
  'cronjob-controller',
  'ttl-after-finished-controller',
  'disruption-controller',
  'endpointslice-controller',
  'resourcequota-controller',
  'pod-garbage-collector-controller',
];

const IDENTITIES = [
  { name: 'admin', user: 'opkit-admin', groups: ['system:masters'] },
  { name: 'kube-controller-manager', user: 'system:kube-controller-manager', groups: ['system:masters'] },
  { name: 'kube-scheduler', user: 'system:kube-scheduler', groups: ['system:masters'] },
  { name: 'kwok', user: 'kwok-controller', groups: ['system:masters'] },
] as const;

// The sibling module as this one is run: `.ts` from the sources, `.js` from the built package.
const WATCHDOG = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './watchdog.ts' : './watchdog.js', import.meta.url),
);

/** Starts a control plane. Retries with fresh ports if another process took one of them first. */
export async function start(options: StartOptions = {}): Promise<Environment> {
  const log = options.log ?? defaultLog;
  const nodes = options.nodes ?? 3;
  if (!Number.isInteger(nodes) || nodes < 0) {
    throw new TestenvError('InvalidOption', `nodes must be a whole number ≥ 0, got ${nodes}`);
  }
  await reapStale(log);
  const binaries = await resolveBinaries({
    ...(options.binaryDir ? { binaryDir: options.binaryDir } : {}),
    ...(options.build !== undefined ? { build: options.build } : {}),
    log,
  });
  for (let attempt = 1; ; attempt++) {
    const dir = await makeRunDir(options.dir);
    const env = new Environment(dir, binaries, options, log);
    try {
      await env.boot();
      return env;
    } catch (err) {
      await env.stop().catch(() => {});
      const portRace = isTestenvError(err, 'ComponentFailed') && /address already in use/.test(err.message);
      if (!portRace || attempt >= 3) throw err;
      log(`a port was taken by another process; retrying (${attempt}/3)`);
    }
  }
}

async function makeRunDir(dir: string | undefined): Promise<string> {
  if (!dir) {
    await mkdir(runRoot(), { recursive: true });
    return mkdtemp(join(runRoot(), 'env-'));
  }
  const existing = await readdir(dir).catch(() => undefined);
  if (existing && existing.length > 0) {
    throw new TestenvError(
      'InvalidOption',
      `the run directory ${dir} is not empty: choose another, or remove it yourself if it holds nothing you need`,
    );
  }
  await mkdir(dir, { recursive: true });
  return dir;
}

/**
 * A running control plane, made by `start()` (see the module comment for what it guarantees); `stop()`, or
 * `await using`, ends it.
 */
export class Environment {
  /** The run directory: certificates, kubeconfigs, logs (`<component>.log`), etcd data. */
  readonly dir: string;
  /** The binaries it runs. */
  readonly binaries: BinaryPaths;
  /** Number of fake nodes (kwok), named `kwok-node-<i>`; each is Ready once `start()` resolved. */
  readonly nodes: number;
  /** `https://127.0.0.1:<port>` */
  server = '';
  /** Admin kubeconfig (client certificate in group system:masters). */
  kubeconfigPath: string;
  /** The admin kubeconfig, parsed (set once `start()` resolved). */
  kubeconfig: Kubeconfig | undefined;
  /** The apiserver audit log when `auditLog` was set. */
  readonly auditLogPath: string | undefined;
  readonly #options: StartOptions;
  readonly #log: (line: string) => void;
  readonly #components = new Map<ComponentId, Component>();
  #ports: Record<string, number> = {};
  #pki: Pki | undefined;
  #api: ApiClient | undefined;
  #watchdog: ReturnType<typeof spawn> | undefined;
  #stopped = false;
  readonly #onExit = () => {
    for (const c of this.#components.values()) c.killNow();
  };

  constructor(dir: string, binaries: BinaryPaths, options: StartOptions, log: (line: string) => void) {
    this.dir = dir;
    this.binaries = binaries;
    this.nodes = options.nodes ?? 3;
    this.#options = options;
    this.#log = log;
    this.kubeconfigPath = join(dir, 'kubeconfig');
    this.auditLogPath = options.auditLog ? join(dir, 'audit.log') : undefined;
  }

  /** Admin API client (raw JSON over HTTPS). */
  get api(): ApiClient {
    if (!this.#api) throw new TestenvError('NotRunning', 'the environment is not running');
    return this.#api;
  }

  /** The CA certificate (PEM) that signs the apiserver's serving certificate. */
  get caPem(): string {
    if (!this.#pki) throw new TestenvError('NotRunning', 'the environment is not running');
    return this.#pki.ca.certPem;
  }

  /**
   * Points webhook configurations and CRD conversions at a webhook server on loopback (`url:` with a test CA), as
   * envtest's WebhookInstallOptions; serve with the returned `port` and the files in `certDir` (module webhooks).
   */
  installWebhooks(options: InstallWebhooksOptions): Promise<InstalledWebhooks> {
    return installWebhooks(this.api, this.dir, options);
  }

  /** pid of each running component. */
  get pids(): Partial<Record<ComponentId, number>> {
    const pids: Partial<Record<ComponentId, number>> = {};
    for (const [id, c] of this.#components) if (c.pid !== undefined) pids[id] = c.pid;
    return pids;
  }

  /** @internal Brings every component up; used by `start()`. */
  async boot(): Promise<void> {
    const t0 = performance.now();
    await writeFile(join(this.dir, 'owner.json'), JSON.stringify({ ownerPid: process.pid }));
    this.#startWatchdog();
    process.on('exit', this.#onExit);
    const [etcdClient, etcdPeer, apiserver, kcm, scheduler, kwok] = await freePorts(6);
    this.#ports = {
      etcdClient: etcdClient as number,
      etcdPeer: etcdPeer as number,
      apiserver: apiserver as number,
      kcm: kcm as number,
      scheduler: scheduler as number,
      kwok: kwok as number,
    };
    this.server = `https://127.0.0.1:${apiserver}`;
    const pki = await createPki(this.dir, IDENTITIES);
    this.#pki = pki;
    const kubeconfigs: Record<string, string> = {};
    for (const id of IDENTITIES) {
      const cert = pki.clients[id.name] as CertPair;
      const config = makeKubeconfig({
        name: 'opkit-testenv',
        server: this.server,
        caPem: pki.ca.certPem,
        user: id.user,
        credentials: { kind: 'certificate', certPem: cert.certPem, keyPem: cert.keyPem },
      });
      const path = id.name === 'admin' ? this.kubeconfigPath : join(this.dir, `${id.name}.kubeconfig`);
      await writeKubeconfig(path, config);
      kubeconfigs[id.name] = path;
      if (id.name === 'admin') this.kubeconfig = config;
    }
    const admin = pki.clients.admin as CertPair;
    this.#api = new ApiClient(this.server, pki.ca.certPem, {
      kind: 'certificate',
      certPem: admin.certPem,
      keyPem: admin.keyPem,
    });
    if (this.auditLogPath) {
      await writeFile(
        join(this.dir, 'audit-policy.yaml'),
        'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n',
      );
    }
    await writeFile(
      join(this.dir, 'kwok.yaml'),
      [
        'apiVersion: config.kwok.x-k8s.io/v1alpha1',
        'kind: KwokConfiguration',
        'options:',
        '  nodeLeaseDurationSeconds: 40',
        '  nodeLeaseParallelism: 4',
        '  nodePlayStageParallelism: 4',
        '  podPlayStageParallelism: 8',
        '  podsOnNodeSyncParallelism: 2',
        '---',
        '',
      ].join('\n') + (await readFile(this.binaries.kwokStages, 'utf8')),
    );
    this.#define(pki, kubeconfigs);
    await this.#component('etcd').start();
    await this.#component('kube-apiserver').start();
    await Promise.all(
      (['kube-controller-manager', 'kube-scheduler', 'kwok'] as const).map((id) => this.#component(id).start()),
    );
    await this.#createNodes();
    await this.#waitFor('every node Ready and the default ServiceAccount', () => this.#settled());
    await this.#writeState();
    this.#log(
      `control plane ready in ${((performance.now() - t0) / 1000).toFixed(1)} s at ${this.server} (${this.dir})`,
    );
  }

  /**
   * Restarts one component with the same flags, ports and data (etcd data survives an apiserver or etcd restart).
   * `downMs` keeps it stopped for that long first, to simulate an outage.
   */
  async restart(id: ComponentId, options: { downMs?: number } = {}): Promise<void> {
    const c = this.#component(id);
    await c.stop();
    if (options.downMs) await sleep(options.downMs);
    await c.start();
    await this.#writeState();
  }

  /** Stops one component (for fault tests); `startComponent` brings it back. */
  async stopComponent(id: ComponentId): Promise<void> {
    await this.#component(id).stop();
    await this.#writeState();
  }

  /**
   * Starts a component that `stopComponent` stopped, with the same flags, ports and data; resolves once it is ready,
   * else fails as `start()` does (`ComponentFailed`, `StartTimeout`).
   */
  async startComponent(id: ComponentId): Promise<void> {
    await this.#component(id).start();
    await this.#writeState();
  }

  /**
   * The JSON etcd stores for `key` (e.g. `/registry/<group>/<plural>/<namespace>/<name>` for a custom resource, which
   * the apiserver stores as JSON), or undefined when there is none: what is really stored, e.g. in which version.
   */
  async etcdValue(key: string): Promise<unknown> {
    const url = `http://127.0.0.1:${this.#ports.etcdClient}`;
    const range = JSON.parse(await postText(`${url}/v3/kv/range`, { key: Buffer.from(key).toString('base64') })) as {
      kvs?: { value?: string }[];
    };
    const value = range.kvs?.[0]?.value;
    return value === undefined ? undefined : (JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as unknown);
  }

  /**
   * Compacts etcd's history up to its current revision, so a watch resumed from an older resourceVersion gets
   * 410 Gone once the apiserver's watch cache no longer covers it (restart the apiserver to empty that cache).
   * Returns the revision compacted to.
   */
  async compactEtcd(): Promise<number> {
    const url = `http://127.0.0.1:${this.#ports.etcdClient}`;
    const range = JSON.parse(await postText(`${url}/v3/kv/range`, { key: Buffer.from('/').toString('base64') })) as {
      header?: { revision?: string };
    };
    const revision = Number(range.header?.revision);
    if (!Number.isInteger(revision) || revision <= 0) {
      throw new TestenvError('ApiRequestFailed', `etcd reported no revision: ${JSON.stringify(range)}`);
    }
    await postText(`${url}/v3/kv/compaction`, { revision: String(revision), physical: true });
    return revision;
  }

  /**
   * A kubeconfig that authenticates as a ServiceAccount (created if missing) with a bound token from the
   * TokenRequest API, so code under test runs with only the permissions RBAC gives that account.
   */
  async kubeconfigFor(sa: ServiceAccountRef): Promise<ServiceAccountKubeconfig> {
    const namespace = sa.namespace ?? 'default';
    const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts`;
    const created = await this.api.request({
      method: 'POST',
      path: base,
      body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa.name, namespace } },
    });
    if (created.status !== 201 && created.status !== 409) {
      throw new TestenvError('ApiRequestFailed', `creating ServiceAccount ${namespace}/${sa.name}: ${created.text}`);
    }
    const tr = await this.api.must<{ status: { token: string } }>({
      method: 'POST',
      path: `${base}/${encodeURIComponent(sa.name)}/token`,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: sa.expirationSeconds ?? 86_400 },
      },
    });
    const user = `system:serviceaccount:${namespace}:${sa.name}`;
    const kubeconfig = makeKubeconfig({
      name: 'opkit-testenv',
      server: this.server,
      caPem: this.caPem,
      user,
      namespace,
      credentials: { kind: 'token', token: tr.status.token },
    });
    const path = join(this.dir, `kubeconfig-sa-${namespace}-${sa.name}`);
    await writeKubeconfig(path, kubeconfig);
    return { path, kubeconfig, token: tr.status.token, user };
  }

  /** Stops every component (kwok, scheduler, controller-manager, apiserver, etcd) and removes the run directory. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    const stopAll = async (ids: readonly ComponentId[]) =>
      Promise.all(ids.map((id) => this.#components.get(id)?.stop()));
    await stopAll(['kwok', 'kube-scheduler', 'kube-controller-manager']);
    await stopAll(['kube-apiserver']);
    await stopAll(['etcd']);
    this.#api?.close();
    process.off('exit', this.#onExit);
    if (this.#options.keepDir) await writeFile(join(this.dir, KEPT_MARKER), KEPT_TEXT);
    this.#watchdog?.stdin?.end('done\n');
    if (!this.#options.keepDir) await rm(this.dir, { recursive: true, force: true });
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  #component(id: ComponentId): Component {
    const c = this.#components.get(id);
    if (!c) throw new TestenvError('NotRunning', `${id} is not part of this environment`);
    return c;
  }

  #startWatchdog(): void {
    const child = spawn(process.execPath, [WATCHDOG, this.dir], {
      stdio: ['pipe', 'ignore', 'ignore'],
      detached: true,
    });
    child.unref();
    (child.stdin as unknown as Socket).unref();
    child.stdin?.on('error', () => {});
    if (this.#options.keepDir) child.stdin?.write('keep\n');
    this.#watchdog = child;
  }

  #define(pki: Pki, kubeconfigs: Record<string, string>): void {
    const p = this.#ports;
    const timeout = this.#options.startTimeoutMs ?? 60_000;
    const add = (id: ComponentId, binary: string, args: string[], probe: () => Promise<boolean>) => {
      const c = new Component({
        name: id,
        binary,
        args,
        logFile: join(this.dir, `${id}.log`),
        probe,
        startTimeoutMs: timeout,
      });
      c.onSpawn = (pid) => {
        this.#watchdog?.stdin?.write(`pid ${pid}\n`);
      };
      this.#components.set(id, c);
    };
    const etcdUrl = `http://127.0.0.1:${p.etcdClient}`;
    const peerUrl = `http://127.0.0.1:${p.etcdPeer}`;
    add(
      'etcd',
      this.binaries.etcd,
      [
        '--name=default',
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--unsafe-no-fsync=true',
        '--quota-backend-bytes=8589934592',
        '--log-level=warn',
      ],
      async () => (await getText(`${etcdUrl}/health`)).includes('"health":"true"'),
    );
    const audit: string[] = [];
    if (this.auditLogPath) {
      const policy = join(this.dir, 'audit-policy.yaml');
      audit.push(
        `--audit-policy-file=${policy}`,
        `--audit-log-path=${this.auditLogPath}`,
        '--audit-log-format=json',
        '--audit-log-maxsize=0',
      );
    }
    add(
      'kube-apiserver',
      this.binaries['kube-apiserver'],
      [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        '--endpoint-reconciler-type=none',
        `--secure-port=${p.apiserver}`,
        `--cert-dir=${join(this.dir, 'apiserver-certs')}`,
        `--tls-cert-file=${pki.serving.certFile}`,
        `--tls-private-key-file=${pki.serving.keyFile}`,
        `--client-ca-file=${pki.ca.certFile}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
        `--service-account-key-file=${pki.serviceAccountPublicKeyFile}`,
        `--service-account-signing-key-file=${pki.serviceAccountKeyFile}`,
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        '--disable-admission-plugins=TaintNodesByCondition',
        '--profiling=false',
        ...audit,
        ...(this.#options.apiserverArgs ?? []),
      ],
      () => this.#apiReady(),
    );
    const clientArgs = (id: string) => [
      `--kubeconfig=${kubeconfigs[id]}`,
      `--authentication-kubeconfig=${kubeconfigs[id]}`,
      `--authorization-kubeconfig=${kubeconfigs[id]}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
    ];
    add(
      'kube-controller-manager',
      this.binaries['kube-controller-manager'],
      [
        ...clientArgs('kube-controller-manager'),
        `--secure-port=${p.kcm}`,
        `--cert-dir=${join(this.dir, 'kcm-certs')}`,
        `--controllers=${CONTROLLERS.join(',')}`,
        `--service-account-private-key-file=${pki.serviceAccountKeyFile}`,
        `--root-ca-file=${pki.ca.certFile}`,
        '--kube-api-qps=200',
        '--kube-api-burst=400',
      ],
      async () => (await getText(`https://127.0.0.1:${p.kcm}/healthz`)) === 'ok',
    );
    add(
      'kube-scheduler',
      this.binaries['kube-scheduler'],
      [...clientArgs('kube-scheduler'), `--secure-port=${p.scheduler}`, '--kube-api-qps=500', '--kube-api-burst=1000'],
      async () => (await getText(`https://127.0.0.1:${p.scheduler}/healthz`)) === 'ok',
    );
    add(
      'kwok',
      this.binaries.kwok,
      [
        `--kubeconfig=${kubeconfigs.kwok}`,
        `--config=${join(this.dir, 'kwok.yaml')}`,
        '--manage-all-nodes=false',
        '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
        '--cidr=10.244.0.0/16',
        '--node-ip=10.0.0.2',
        `--server-address=127.0.0.1:${p.kwok}`,
      ],
      async () => (await getText(`http://127.0.0.1:${p.kwok}/healthz`)) === 'ok',
    );
  }

  async #apiReady(): Promise<boolean> {
    const res = await this.api.request({ path: '/readyz', timeoutMs: 2_000 });
    return res.status === 200;
  }

  async #createNodes(): Promise<void> {
    const pods = String(this.#options.podsPerNode ?? 110);
    const resources = { cpu: '32', memory: '256Gi', pods, 'ephemeral-storage': '1Ti' };
    await Promise.all(
      Array.from({ length: this.nodes }, async (_, i) => {
        const name = `kwok-node-${i}`;
        const res = await this.api.request({
          method: 'POST',
          path: '/api/v1/nodes',
          body: {
            apiVersion: 'v1',
            kind: 'Node',
            metadata: {
              name,
              annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
              labels: {
                'kubernetes.io/arch': 'amd64',
                'kubernetes.io/hostname': name,
                'kubernetes.io/os': 'linux',
                'kubernetes.io/role': 'agent',
                'node-role.kubernetes.io/agent': '',
                type: 'kwok',
              },
            },
            status: { allocatable: resources, capacity: resources },
          },
        });
        if (res.status !== 201 && res.status !== 409) {
          throw new TestenvError('ApiRequestFailed', `creating node ${name}: ${res.status} ${res.text}`);
        }
      }),
    );
  }

  async #settled(): Promise<boolean> {
    const list = await this.api.request<{ items?: { status?: { conditions?: { type: string; status: string }[] } }[] }>(
      { path: '/api/v1/nodes' },
    );
    const ready = (list.body.items ?? []).filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    ).length;
    if (ready < this.nodes) return false;
    const sa = await this.api.request({ path: '/api/v1/namespaces/default/serviceaccounts/default' });
    return sa.status === 200;
  }

  async #waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
    const timeout = this.#options.startTimeoutMs ?? 60_000;
    const deadline = Date.now() + timeout;
    for (;;) {
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) {
        const tails = await Promise.all(
          (['kube-controller-manager', 'kwok'] as const).map(
            async (id) => `--- ${id}:\n${await this.#component(id).logTail(10)}`,
          ),
        );
        throw new TestenvError(
          'StartTimeout',
          `the control plane did not reach "${what}" within ${timeout / 1000} s\n${tails.join('\n')}`,
        );
      }
      await sleep(100);
    }
  }

  async #writeState(): Promise<void> {
    const state: EnvironmentState = {
      ownerPid: process.pid,
      server: this.server,
      kubeconfigPath: this.kubeconfigPath,
      pids: this.pids,
      ports: this.#ports,
      nodes: this.nodes,
      startedAt: new Date().toISOString(),
    };
    await writeFile(join(this.dir, 'state.json'), `${JSON.stringify(state, null, 2)}\n`);
  }
}

/** POST JSON to etcd's HTTP gateway on loopback; resolves with the body of a 200, rejects otherwise. */
function postText(url: string, body: unknown): Promise<string> {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', timeout: 10_000, headers: { 'content-type': 'application/json' } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode === 200) resolve(text);
          else reject(new TestenvError('ApiRequestFailed', `POST ${url} answered ${res.statusCode}: ${text}`));
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

/** GET over HTTP(S) on loopback, accepting self-signed serving certificates (probes only). */
function getText(url: string): Promise<string> {
  const request = url.startsWith('https:') ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { timeout: 2_000, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8').trim()));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Ends the components of run directories whose owner process is gone (it was killed before it could stop them and
 * the watchdog could not act either), then removes those directories — except those marked kept (`keepDir`).
 */
export async function reapStale(log: (line: string) => void = defaultLog, root: string = runRoot()): Promise<void> {
  const entries = await readdir(root).catch(() => [] as string[]);
  for (const entry of entries) {
    const dir = join(root, entry);
    const owner = await readFile(join(dir, 'owner.json'), 'utf8')
      .then((t) => (JSON.parse(t) as { ownerPid: number }).ownerPid)
      .catch(() => undefined);
    if (owner === undefined || isProcessAlive(owner)) continue;
    const state = await readFile(join(dir, 'state.json'), 'utf8')
      .then((t) => JSON.parse(t) as EnvironmentState)
      .catch(() => undefined);
    let killed = 0;
    for (const pid of Object.values(state?.pids ?? {})) {
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmdline.includes(dir)) {
        process.kill(pid, 'SIGKILL');
        killed += 1;
      }
    }
    const kept = await readFile(join(dir, KEPT_MARKER)).then(
      () => true,
      () => false,
    );
    if (kept) {
      if (killed > 0) log(`ended ${killed} orphaned processes of the kept environment in ${dir}`);
      continue;
    }
    await rm(dir, { recursive: true, force: true });
    log(`reaped a stale environment in ${dir}${killed > 0 ? ` (${killed} orphaned processes ended)` : ''}`);
  }
}
