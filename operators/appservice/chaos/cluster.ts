/**
 * @module chaos/cluster
 * The system under test, as it runs in production: a control plane (with the audit log), the operator's API, RBAC
 * and webhook configurations from the generated install manifests, and two operator replicas with leader election,
 * each authenticating as the operator's ServiceAccount through its own fault proxy and named by POD_NAME (so the audit
 * log tells them apart by user agent). The replicas serve the admission and conversion webhooks themselves (one
 * serving certificate, from a CA of the harness, as a mounted Secret would give them), behind the library's webhook
 * Service (@opkit/testenv/chaos `WebhookService`), which routes to the ones whose `/readyz` answers; the webhook
 * configurations and the CRD's conversion call that Service (`failurePolicy: Fail`). The library's `Replica` plays
 * the kubelet: a replica that exits is started again after a short back-off, every exit is recorded with the
 * replica's log, and the output is watched for the ServiceAccount token.
 * `sharded: true` runs the replicas with `--sharding` instead (every replica active, each on its own buckets; no
 * leader election; the RBAC of config/sharding added, as a sharded install does), serving plain-HTTP /metrics on a
 * port of their own, and records the bodies of the operator's writes to leases, pods, AppServices and Events in the
 * audit log (the sharded chaos audit policy), so the fences can be checked from it (chaos/fences); `spawnReplica`
 * starts one more replica the same way (chaos/sharded's `replica-add`).
 * `Replica.pause()` stops a replica's process where it stands (SIGSTOP) and `resume()` continues it (the `pause`
 * fault, chaos/pause); the supervisor sees no exit, as a kubelet sees none for a stalled process.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '@opkit/runtime';
import { Applier, Client, loadConfig, parseManifests, resource } from '@opkit/runtime/client';
import { type Lease, Leases, Namespaces } from '@opkit/runtime/kinds';
import { type Environment, FaultProxy, start, targetOf } from '@opkit/testenv';
import { type ReplicaSpec, Replica as SupervisedReplica, WebhookService } from '@opkit/testenv/chaos';
import { installApiAndRbac, installObjects, NAME, NAMESPACE } from '../src/install.ts';
import { shardedAuditPolicy } from './audit-bodies.ts';
import type { ShardFilter } from './fences.ts';

export const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
/** The operator runs from this repository's sources: the workspace packages' source export condition, alone. */
export const SOURCE_CONDITION = '--conditions=@opkit/source';
export const CHAOS_NAMESPACE = 'chaos';
export const OPERATOR_USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;
const LEASE = { namespace: NAMESPACE, name: `${NAME}-leader` };

/** How long the supervisor waits before it starts a replica that exited again (a kubelet's back-off, shortened). */
export const RESTART_DELAY_MS = 1_000;

/** How a replica runs: with leader election (one active), or sharded (all active, each on its buckets). */
export type ReplicaMode = 'leader' | 'sharded';

/** Where a replica serves: its webhook and health ports (fixed across restarts, as a pod's), its certificate. */
export interface Serving {
  readonly service: WebhookService;
  readonly webhookPort: number;
  readonly healthPort: number;
  /** `tls.crt` and `tls.key`. */
  readonly certDir: string;
  /** Sharded: where it serves plain-HTTP /metrics (fixed across restarts). */
  readonly metricsPort?: number;
}

/**
 * One AppService replica: the library's supervised replica (@opkit/testenv/chaos `Replica`: restarts, exits, pause,
 * the token watched for in its output, its webhook endpoint kept up to date) running `src/main.ts` in `mode`, with the
 * fault proxy it reaches the apiserver through.
 */
export class Replica extends SupervisedReplica {
  readonly proxy: FaultProxy;
  readonly kubeconfig: string;
  readonly serving: Serving;
  readonly mode: ReplicaMode;

  constructor(
    name: string,
    proxy: FaultProxy,
    kubeconfig: string,
    serving: Serving,
    mode: ReplicaMode,
    token: string,
    filter: ShardFilter = 'labels',
  ) {
    super(replicaSpec(name, kubeconfig, serving, mode, filter), {
      restartDelayMs: RESTART_DELAY_MS,
      secrets: [token],
      // its endpoint in the webhook Service (probed on its health port)
      events: serving.service.add({ name, port: serving.webhookPort, healthPort: serving.healthPort }),
    });
    this.proxy = proxy;
    this.kubeconfig = kubeconfig;
    this.serving = serving;
    this.mode = mode;
  }

  /** The metrics URL of a sharded replica. */
  get metricsUrl(): string | undefined {
    return this.serving.metricsPort ? `http://127.0.0.1:${this.serving.metricsPort}/metrics` : undefined;
  }
}

/** The operator's command line: its own node process (no wrapper), in `mode`, serving on the ports of `serving`. */
function replicaSpec(
  name: string,
  kubeconfig: string,
  serving: Serving,
  mode: ReplicaMode,
  filter: ShardFilter,
): ReplicaSpec {
  const metrics = ['--metrics-bind-address', `127.0.0.1:${serving.metricsPort}`, '--metrics-secure=false'];
  const modeArgs =
    mode === 'sharded'
      ? ['--sharding', `--sharding-filter=${filter}`, ...metrics]
      : ['--leader-elect', '--leader-election-namespace', NAMESPACE, '--metrics-bind-address', '0'];
  return {
    name,
    command: process.execPath,
    args: [
      MAIN,
      '--kubeconfig',
      kubeconfig,
      ...modeArgs,
      '--health-probe-bind-address',
      `127.0.0.1:${serving.healthPort}`,
      '--webhook-bind-address',
      `127.0.0.1:${serving.webhookPort}`,
      '--webhook-cert-dir',
      serving.certDir,
      '--log-level',
      'debug',
    ],
    cwd: process.cwd(),
    env: { POD_NAME: name, POD_NAMESPACE: NAMESPACE, NODE_OPTIONS: SOURCE_CONDITION, ENABLE_WEBHOOKS: 'true' },
  };
}

export interface ChaosCluster {
  readonly env: Environment;
  readonly admin: Client;
  /** Sharded: how the replicas select their shards. */
  readonly filter: ShardFilter;
  readonly auditLog: string;
  readonly replicas: readonly Replica[];
  /** The webhook Service in front of the replicas (admission and conversion, `failurePolicy: Fail`). */
  readonly webhooks: WebhookService;
  /** The replica holding the Lease now (by its holderIdentity), if any. */
  leader(): Promise<Replica | undefined>;
  lease(): Promise<Lease | undefined>;
  /**
   * Starts one more replica, in the cluster's mode, through a fault proxy of its own (not in `replicas`; stopped with
   * the cluster).
   */
  spawnReplica(): Promise<Replica>;
  stop(): Promise<void>;
}

interface AccessReview extends KubeObject {
  spec: { user: string; resourceAttributes: { namespace: string; verb: string; group: string; resource: string } };
  status?: { allowed?: boolean };
}
const SubjectAccessReviews = resource<AccessReview>({
  group: 'authorization.k8s.io',
  version: 'v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  namespaced: false,
});

/**
 * Waits until the apiserver's authorizer knows the RBAC just applied (it learns it from a watch, a moment later), so
 * the replicas' first requests are judged by it — a Forbidden in the audit log is then the operator's own. Asked by
 * the admin (a SubjectAccessReview), so the operator's identity makes no request here.
 */
async function rbacEffective(admin: Client, verb: 'get' | 'list' = 'get'): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const review = await admin.create(SubjectAccessReviews, {
      metadata: {},
      spec: {
        user: OPERATOR_USER,
        resourceAttributes: { namespace: NAMESPACE, verb, group: 'coordination.k8s.io', resource: 'leases' },
      },
    });
    if (review.status?.allowed) return;
    await sleep(100);
  }
  throw new Error(`the operator ServiceAccount was still not allowed to ${verb} Leases after 10 s`);
}

/** A port nothing listens on now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** What `chaosCluster` runs. */
export interface ChaosClusterOptions {
  /** Replicas to start (default 2, or 3 sharded), named chaos-a, chaos-b, … */
  readonly replicas?: number;
  /** Run them with `--sharding` (see the module comment; default false: leader election). */
  readonly sharded?: boolean;
  /**
   * Sharded: how the replicas select their shards (`--sharding-filter`, default `labels`); `server` turns the
   * apiserver's `ShardedListAndWatch` gate on.
   */
  readonly filter?: ShardFilter;
}

const NAMES = ['chaos-a', 'chaos-b', 'chaos-c', 'chaos-d', 'chaos-e', 'chaos-f'];

/** What every replica is made from: the operator's ServiceAccount kubeconfig and token, the serving certificate. */
interface Installed {
  readonly admin: Client;
  readonly kubeconfigText: string;
  readonly token: string;
  readonly certDir: string;
  readonly filter: ShardFilter;
}

/** The sharding component's RBAC (Leases list and delete, patch of AppServices), as a sharded install adds it. */
const SHARDING_RBAC = new URL('../config/sharding/rbac.yaml', import.meta.url);

/**
 * The operator's API, RBAC (and the sharding component's, if `sharded`) and webhook configurations (calling
 * `service`), the chaos namespace, the RBAC in effect.
 */
async function install(
  env: Environment,
  service: WebhookService,
  sharded: boolean,
  filter: ShardFilter,
): Promise<Installed> {
  const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'chaos-admin' });
  await installApiAndRbac(admin, { webhooks: 'none' });
  if (sharded)
    await new Applier(admin, 'opkit').applyAll(
      parseManifests(await readFile(SHARDING_RBAC, 'utf8'), 'config/sharding/rbac.yaml'),
    );
  // the configurations and the CRD's conversion call the Service, with the CA of the replicas' certificate
  const hooks = await env.installWebhooks({
    configurations: (await installObjects()).filter((o) => o.kind?.endsWith('WebhookConfiguration')),
    conversions: ['appservices.app.example.com'],
    port: service.port,
  });
  await admin.create(Namespaces, { metadata: { name: CHAOS_NAMESPACE } });
  const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
  await rbacEffective(admin, sharded ? 'list' : 'get');
  const { certDir } = hooks;
  return { admin, kubeconfigText: await readFile(sa.path, 'utf8'), token: sa.token, certDir, filter };
}

/** A replica named `name` behind a fault proxy of its own, started. */
async function startReplica(
  env: Environment,
  service: WebhookService,
  installed: Installed,
  name: string,
  mode: ReplicaMode,
): Promise<Replica> {
  const proxy = await FaultProxy.start({ target: targetOf(env.server) });
  const kubeconfig = join(env.dir, `kubeconfig-${name}`);
  await writeFile(kubeconfig, installed.kubeconfigText.replace(env.server, proxy.url), { mode: 0o600 });
  const serving = {
    service,
    webhookPort: await freePort(),
    healthPort: await freePort(),
    certDir: installed.certDir,
    ...(mode === 'sharded' ? { metricsPort: await freePort() } : {}),
  };
  const r = new Replica(name, proxy, kubeconfig, serving, mode, installed.token, installed.filter);
  r.start();
  return r;
}

export async function chaosCluster(options: ChaosClusterOptions = {}): Promise<ChaosCluster> {
  const mode: ReplicaMode = options.sharded ? 'sharded' : 'leader';
  const filter = options.filter ?? 'labels';
  const policyDir = options.sharded ? await mkdtemp(join(tmpdir(), 'chaos-audit-')) : undefined;
  if (policyDir) await writeFile(join(policyDir, 'audit-policy.yaml'), shardedAuditPolicy(OPERATOR_USER));
  const env = await start({
    nodes: 3,
    podsPerNode: 500,
    auditLog: true,
    log: () => {},
    apiserverArgs: [
      // a later flag wins: the sharded policy replaces the default one
      ...(policyDir ? [`--audit-policy-file=${join(policyDir, 'audit-policy.yaml')}`] : []),
      ...(filter === 'server' ? ['--feature-gates=ShardedListAndWatch=true'] : []),
    ],
  });
  const replicas: Replica[] = [];
  const spawned: Replica[] = [];
  const service = await WebhookService.start();
  const stopAll = async () => {
    await Promise.all(
      [...replicas, ...spawned].map(async (r) => {
        await r.close(10_000);
        await r.proxy.close();
      }),
    );
    await service.close();
    await env.stop();
    if (policyDir) await rm(policyDir, { recursive: true, force: true });
  };
  try {
    const installed = await install(env, service, options.sharded ?? false, filter);
    const { admin } = installed;
    for (const name of NAMES.slice(0, options.replicas ?? (options.sharded ? 3 : 2)))
      replicas.push(await startReplica(env, service, installed, name, mode));
    // writes of AppServices need the webhooks from here on
    await service.waitReady(replicas.length, 120_000);
    return {
      env,
      admin,
      filter,
      auditLog: env.auditLogPath as string,
      replicas,
      webhooks: service,
      lease: () => admin.get(Leases, LEASE).catch(() => undefined),
      async leader() {
        const holder = (await admin.get(Leases, LEASE).catch(() => undefined))?.spec?.holderIdentity ?? '';
        return replicas.find((r) => holder.startsWith(`${r.name}_`));
      },
      async spawnReplica() {
        const name = NAMES[replicas.length + spawned.length];
        if (!name) throw new Error('chaosCluster: no more replica names');
        const r = await startReplica(env, service, installed, name, mode);
        spawned.push(r);
        return r;
      },
      async stop() {
        admin.close();
        await stopAll();
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
