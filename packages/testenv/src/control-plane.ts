/**
 * @module control-plane
 * What each of the five components of an environment runs with: its ports, client identity and kubeconfig, the files
 * its flags name (the audit policy, kwok's configuration), its flags and its readiness probe. Nothing here starts a
 * process: `environment.ts` supervises each definition as a `Component` (component.ts).
 *
 * Guarantees:
 * - Every component listens on 127.0.0.1 only, on the ports `allocatePorts()` picked, and keeps every file it writes
 *   in the run directory, so several environments run at once without interfering.
 * - `componentDefinitions()` lists the components in the order they must start (etcd, kube-apiserver, then the
 *   others), and a component keeps the same flags, ports and data across a restart.
 * - Each probe resolves true only when its component serves (etcd `/health`, the apiserver `/readyz`, the others
 *   `/healthz`); it may throw while the component is not up yet.
 * Caveats (see the module comment of environment.ts): the TaintNodesByCondition admission plugin is disabled, and the
 * client rate limits of the controller-manager and scheduler are raised. The controller-manager runs the in-tree
 * host-path provisioner (volumes.ts) and resyncs PVs and PVCs every second instead of every 15 s: the binder retries a
 * write that met a conflict (common while a PVC and its PV are deleted) only at its next resync.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import type { BinaryPaths } from './binaries.ts';
import type { CertPair, ClientIdentity, Pki } from './certs.ts';
import { TestenvError } from './errors.ts';
import { type Kubeconfig, makeKubeconfig, writeKubeconfig } from './kubeconfig.ts';
import { freePorts } from './ports.ts';

/** The components of an environment, as `restart`, `stopComponent` and `startComponent` name them. */
export type ComponentId = 'etcd' | 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kwok';

/**
 * The kube-controller-manager controllers that run (canonical names): workloads, garbage collection, namespaces,
 * service accounts, and the volume controllers (PV binder and provisioning, PV and PVC protection, expander,
 * generic ephemeral volumes). No attach-detach controller: kwok nodes mount nothing.
 */
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
  'persistentvolume-binder-controller',
  'persistentvolume-protection-controller',
  'persistentvolumeclaim-protection-controller',
  'persistentvolume-expander-controller',
  'ephemeral-volume-controller',
];

/** The client identities the PKI issues certificates for: the admin, and each component that talks to the apiserver. */
export const IDENTITIES: readonly ClientIdentity[] = [
  { name: 'admin', user: 'opkit-admin', groups: ['system:masters'] },
  { name: 'kube-controller-manager', user: 'system:kube-controller-manager', groups: ['system:masters'] },
  { name: 'kube-scheduler', user: 'system:kube-scheduler', groups: ['system:masters'] },
  { name: 'kwok', user: 'kwok-controller', groups: ['system:masters'] },
];

/** The loopback ports of one environment. */
export type Ports = Readonly<Record<'etcdClient' | 'etcdPeer' | 'apiserver' | 'kcm' | 'scheduler' | 'kwok', number>>;

/** Six distinct free ports on 127.0.0.1 (another process may still take one before its component binds it). */
export async function allocatePorts(): Promise<Ports> {
  const [etcdClient, etcdPeer, apiserver, kcm, scheduler, kwok] = await freePorts(6);
  return {
    etcdClient: etcdClient as number,
    etcdPeer: etcdPeer as number,
    apiserver: apiserver as number,
    kcm: kcm as number,
    scheduler: scheduler as number,
    kwok: kwok as number,
  };
}

/** etcd's client URL on loopback. */
export function etcdUrl(ports: Ports): string {
  return `http://127.0.0.1:${ports.etcdClient}`;
}

/** The kubeconfigs `writeClientKubeconfigs` wrote: the path of each identity's, and the admin's parsed. */
export interface ClientKubeconfigs {
  /** The kubeconfig file of each identity of `IDENTITIES`, by name. */
  readonly paths: Readonly<Record<string, string>>;
  /** The admin kubeconfig (client certificate in group system:masters). */
  readonly admin: Kubeconfig;
}

/**
 * Writes a client-certificate kubeconfig for each identity of `IDENTITIES`: the admin's to `adminPath`, the others'
 * to `<dir>/<name>.kubeconfig`.
 */
export async function writeClientKubeconfigs(
  dir: string,
  server: string,
  pki: Pki,
  adminPath: string,
): Promise<ClientKubeconfigs> {
  const paths: Record<string, string> = {};
  const configs: Record<string, Kubeconfig> = {};
  for (const id of IDENTITIES) {
    const cert = pki.clients[id.name] as CertPair;
    const config = makeKubeconfig({
      name: 'opkit-testenv',
      server,
      caPem: pki.ca.certPem,
      user: id.user,
      credentials: { kind: 'certificate', certPem: cert.certPem, keyPem: cert.keyPem },
    });
    const path = id.name === 'admin' ? adminPath : join(dir, `${id.name}.kubeconfig`);
    await writeKubeconfig(path, config);
    paths[id.name] = path;
    configs[id.name] = config;
  }
  return { paths, admin: configs.admin as Kubeconfig };
}

/**
 * Writes the files the flags name: kwok's configuration (its options, then the stage configuration at `kwokStages`)
 * and, when `auditLog`, the audit policy (level Metadata for every request).
 */
export async function writeComponentFiles(dir: string, kwokStages: string, auditLog: boolean): Promise<void> {
  if (auditLog) {
    await writeFile(
      join(dir, 'audit-policy.yaml'),
      'apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: ["RequestReceived"]\nrules:\n  - level: Metadata\n',
    );
  }
  await writeFile(
    join(dir, 'kwok.yaml'),
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
    ].join('\n') + (await readFile(kwokStages, 'utf8')),
  );
}

/** Everything the components' flags are made from. */
export interface ControlPlanePlan {
  /** The run directory. */
  readonly dir: string;
  /** The binaries to run. */
  readonly binaries: BinaryPaths;
  /** The ports of `allocatePorts()`. */
  readonly ports: Ports;
  /** The test PKI (serving, client CA, service-account keys). */
  readonly pki: Pki;
  /** The kubeconfig file of each client identity (`writeClientKubeconfigs`). */
  readonly kubeconfigs: Readonly<Record<string, string>>;
  /** Where the apiserver writes its audit log; no audit log when undefined. */
  readonly auditLogPath: string | undefined;
  /** Extra kube-apiserver flags (`StartOptions.apiserverArgs`). */
  readonly apiserverArgs: readonly string[];
  /** The apiserver's probe: it is ready (the environment asks its `/readyz` with the admin client). */
  readonly apiReady: () => Promise<boolean>;
}

/** One component to supervise: what to run, and how to tell it serves. */
export interface ComponentDefinition {
  /** Which component. */
  readonly id: ComponentId;
  /** Its executable. */
  readonly binary: string;
  /** Its flags. */
  readonly args: readonly string[];
  /** Resolves true once it serves; may throw while it is not up yet. */
  readonly probe: () => Promise<boolean>;
  /** The port the probe asks (its answer counts only while the component listens there). */
  readonly port: number;
}

/** The five components, in the order they start: etcd, kube-apiserver, then the controller-manager, scheduler, kwok. */
export function componentDefinitions(plan: ControlPlanePlan): ComponentDefinition[] {
  return [etcd(plan), apiserver(plan), controllerManager(plan), scheduler(plan), kwok(plan)];
}

function etcd({ dir, binaries, ports }: ControlPlanePlan): ComponentDefinition {
  const url = etcdUrl(ports);
  const peerUrl = `http://127.0.0.1:${ports.etcdPeer}`;
  return {
    id: 'etcd',
    binary: binaries.etcd,
    args: [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=${url}`,
      `--advertise-client-urls=${url}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
      '--unsafe-no-fsync=true',
      '--quota-backend-bytes=8589934592',
      '--log-level=warn',
    ],
    probe: async () => (await getText(`${url}/health`)).includes('"health":"true"'),
    port: ports.etcdClient,
  };
}

function apiserver(plan: ControlPlanePlan): ComponentDefinition {
  const { dir, pki, ports, auditLogPath } = plan;
  const audit = auditLogPath
    ? [
        `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
        `--audit-log-path=${auditLogPath}`,
        '--audit-log-format=json',
        '--audit-log-maxsize=0',
      ]
    : [];
  return {
    id: 'kube-apiserver',
    binary: plan.binaries['kube-apiserver'],
    args: [
      `--etcd-servers=${etcdUrl(ports)}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      '--endpoint-reconciler-type=none',
      `--secure-port=${ports.apiserver}`,
      `--cert-dir=${join(dir, 'apiserver-certs')}`,
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
      ...plan.apiserverArgs,
    ],
    probe: plan.apiReady,
    port: ports.apiserver,
  };
}

/** The flags of a component that is an apiserver client with its own secure port (controller-manager, scheduler). */
function clientArgs(plan: ControlPlanePlan, id: string): string[] {
  const kubeconfig = plan.kubeconfigs[id];
  return [
    `--kubeconfig=${kubeconfig}`,
    `--authentication-kubeconfig=${kubeconfig}`,
    `--authorization-kubeconfig=${kubeconfig}`,
    '--leader-elect=false',
    '--bind-address=127.0.0.1',
  ];
}

function controllerManager(plan: ControlPlanePlan): ComponentDefinition {
  const { dir, pki, ports } = plan;
  return {
    id: 'kube-controller-manager',
    binary: plan.binaries['kube-controller-manager'],
    args: [
      ...clientArgs(plan, 'kube-controller-manager'),
      `--secure-port=${ports.kcm}`,
      `--cert-dir=${join(dir, 'kcm-certs')}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      `--service-account-private-key-file=${pki.serviceAccountKeyFile}`,
      `--root-ca-file=${pki.ca.certFile}`,
      '--kube-api-qps=200',
      '--kube-api-burst=400',
      '--enable-hostpath-provisioner',
      '--pvclaimbinder-sync-period=1s',
    ],
    probe: async () => (await getText(`https://127.0.0.1:${ports.kcm}/healthz`)) === 'ok',
    port: ports.kcm,
  };
}

function scheduler(plan: ControlPlanePlan): ComponentDefinition {
  const { ports } = plan;
  return {
    id: 'kube-scheduler',
    binary: plan.binaries['kube-scheduler'],
    args: [
      ...clientArgs(plan, 'kube-scheduler'),
      `--secure-port=${ports.scheduler}`,
      '--kube-api-qps=500',
      '--kube-api-burst=1000',
    ],
    probe: async () => (await getText(`https://127.0.0.1:${ports.scheduler}/healthz`)) === 'ok',
    port: ports.scheduler,
  };
}

function kwok({ dir, binaries, ports, kubeconfigs }: ControlPlanePlan): ComponentDefinition {
  return {
    id: 'kwok',
    binary: binaries.kwok,
    args: [
      `--kubeconfig=${kubeconfigs.kwok}`,
      `--config=${join(dir, 'kwok.yaml')}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--cidr=10.244.0.0/16',
      '--node-ip=10.0.0.2',
      `--server-address=127.0.0.1:${ports.kwok}`,
    ],
    probe: async () => (await getText(`http://127.0.0.1:${ports.kwok}/healthz`)) === 'ok',
    port: ports.kwok,
  };
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
    req.on('timeout', () => req.destroy(new TestenvError('ApiRequestFailed', `GET ${url}: no answer within 2 s`)));
    req.on('error', reject);
    req.end();
  });
}
