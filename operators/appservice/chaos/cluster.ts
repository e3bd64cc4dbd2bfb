/**
 * @module chaos/cluster
 * The system under test, as it runs in production: a control plane (with the audit log), the operator's API, RBAC
 * and webhook configurations from the generated install manifests, and two operator replicas with leader election,
 * each authenticating as the operator's ServiceAccount through its own fault proxy and named by POD_NAME (so the audit
 * log tells them apart by user agent). The replicas serve the admission and conversion webhooks themselves (one
 * serving certificate, from a CA of the harness, as a mounted Secret would give them), behind a Service (chaos/service)
 * that routes to the ready ones; the webhook configurations and the CRD's conversion call that Service
 * (`failurePolicy: Fail`). A supervisor plays the kubelet: a replica that exits is started again after a short
 * back-off, and every exit is recorded with the replica's log.
 * `sharded: true` runs the replicas with `--sharding` instead (every replica active, each on its own buckets; no
 * leader election; the RBAC of config/sharding added, as a sharded install does), serving plain-HTTP /metrics on a
 * port of their own, and records the bodies of the operator's writes to leases, pods, AppServices and Events in the
 * audit log (the sharded chaos audit policy), so the fences can be checked from it (chaos/fences); `spawnReplica`
 * starts one more replica the same way (chaos/sharded's `replica-add`).
 * `Replica.pause()` stops a replica's process where it stands (SIGSTOP) and `resume()` continues it (the `pause`
 * fault, chaos/pause); the supervisor sees no exit, as a kubelet sees none for a stalled process.
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
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
import { installApiAndRbac, installObjects, NAME, NAMESPACE } from '../src/install.ts';
import { shardedAuditPolicy } from './audit-bodies.ts';
import { Service } from './service.ts';

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

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly at: number;
  /** Exits the harness caused (kill, SIGTERM) are expected; others are the operator's own decision. */
  readonly caused: boolean;
}

/** Where a replica serves: its webhook and health ports (fixed across restarts, as a pod's), its certificate. */
export interface Serving {
  readonly service: Service;
  readonly webhookPort: number;
  readonly healthPort: number;
  /** `tls.crt` and `tls.key`. */
  readonly certDir: string;
  /** Sharded: where it serves plain-HTTP /metrics (fixed across restarts). */
  readonly metricsPort?: number;
}

export class Replica {
  readonly name: string;
  readonly proxy: FaultProxy;
  readonly kubeconfig: string;
  readonly serving: Serving;
  proc: ChildProcessWithoutNullStreams | undefined;
  /** What the replica printed since the last `takeLog()`, across restarts. */
  #log = '';
  readonly exits: Exit[] = [];
  /** When each of its processes started (ms since the epoch). */
  readonly starts: number[] = [];
  readonly mode: ReplicaMode;
  /** Strings that must never appear in the output (the ServiceAccount token); `leaks` lists any that did. */
  readonly secrets: string[] = [];
  readonly #leaked = new Set<string>();
  #tail = '';
  #causing = false;
  #stopped = false;
  #paused = false;

  constructor(name: string, proxy: FaultProxy, kubeconfig: string, serving: Serving, mode: ReplicaMode = 'leader') {
    this.name = name;
    this.mode = mode;
    this.proxy = proxy;
    this.kubeconfig = kubeconfig;
    this.serving = serving;
    serving.service.add(name, serving.webhookPort, serving.healthPort);
  }

  /** The secrets seen in the output, shortened to their first 6 characters. */
  get leaks(): string[] {
    return [...this.#leaked].map((s) => `${s.slice(0, 6)}…`);
  }

  /** The complete lines output since the last call (each trial checks its own); a partial last line waits. */
  takeLog(): string {
    const end = this.#log.lastIndexOf('\n') + 1;
    const log = this.#log.slice(0, end);
    this.#log = this.#log.slice(end);
    return log;
  }

  /** The output since the last `takeLog()`, left in place. */
  peekLog(): string {
    return this.#log;
  }

  get running(): boolean {
    return this.proc !== undefined && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /**
   * Whether a process runs, once the supervisor had its chance: a replica that exited is waited for until
   * `RESTART_DELAY_MS` + `slackMs` after that exit (an exit at the end of a trial is still in its back-off).
   */
  async runningAgain(slackMs = 5_000): Promise<boolean> {
    const deadline = (this.exits.at(-1)?.at ?? 0) + RESTART_DELAY_MS + slackMs;
    while (!this.running && !this.#stopped && Date.now() < deadline) await sleep(50);
    return this.running;
  }

  /** Its last exit, for a report: `exit 1 at 12:00:01.234Z`, or `no exit`. */
  lastExit(): string {
    const e = this.exits.at(-1);
    return e === undefined ? 'no exit' : `exit ${e.code ?? e.signal} at ${new Date(e.at).toISOString()}`;
  }

  /** Whether its process is stopped by `pause()`. */
  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Stops the operator's process where it stands (SIGSTOP), as a long GC, a blocked event loop or a VM migration
   * would: its timers keep their deadlines, its sockets stay open, and what arrives waits in the kernel. The process
   * signalled is the operator's own node process (spawned directly, no shell or wrapper: checked by its command
   * line), all its threads with it; resolves once the kernel reports it stopped. Its webhook endpoint leaves the
   * Service at once (chaos/service `paused`). Throws if it is not running.
   */
  async pause(): Promise<void> {
    const pid = this.running ? this.proc?.pid : undefined;
    if (pid === undefined) throw new Error(`${this.name}: no running process to pause`);
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
    if (cmdline !== undefined && !cmdline.split('\0').includes(MAIN))
      throw new Error(`${this.name}: pid ${pid} is not the operator's node process (${cmdline.replace(/\0/g, ' ')})`);
    this.proc?.kill('SIGSTOP');
    this.#paused = true;
    this.serving.service.paused(this.name, true);
    for (let i = 0; cmdline !== undefined && (await processState(pid)) !== 'T'; i++) {
      if (i >= 100) throw new Error(`${this.name}: pid ${pid} not stopped 1 s after SIGSTOP`);
      await sleep(10);
    }
  }

  /** Continues a process stopped by `pause()` (SIGCONT); routed to by the Service again once its probe passes. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.proc?.kill('SIGCONT');
    this.serving.service.paused(this.name, false);
  }

  /** The metrics URL of a sharded replica. */
  get metricsUrl(): string | undefined {
    return this.serving.metricsPort ? `http://127.0.0.1:${this.serving.metricsPort}/metrics` : undefined;
  }

  /** Starts a process (again, after `retire()`): the supervisor restarts it until `retire()` or `stop()`. */
  start(): void {
    this.#stopped = false;
    this.starts.push(Date.now());
    const mode =
      this.mode === 'sharded'
        ? ['--sharding', '--metrics-bind-address', `127.0.0.1:${this.serving.metricsPort}`, '--metrics-secure=false']
        : ['--leader-elect', '--leader-election-namespace', NAMESPACE, '--metrics-bind-address', '0'];
    const proc = spawn(
      process.execPath,
      [
        MAIN,
        '--kubeconfig',
        this.kubeconfig,
        ...mode,
        '--health-probe-bind-address',
        `127.0.0.1:${this.serving.healthPort}`,
        '--webhook-bind-address',
        `127.0.0.1:${this.serving.webhookPort}`,
        '--webhook-cert-dir',
        this.serving.certDir,
        '--log-level',
        'debug',
      ],
      {
        env: {
          ...process.env,
          POD_NAME: this.name,
          POD_NAMESPACE: NAMESPACE,
          NODE_OPTIONS: SOURCE_CONDITION,
          ENABLE_WEBHOOKS: 'true',
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    this.proc = proc;
    this.serving.service.started(this.name);
    const add = (text: string) => {
      this.#log += text;
      const window = this.#tail + text; // a secret split across two chunks is still seen
      for (const s of this.secrets) if (window.includes(s)) this.#leaked.add(s);
      this.#tail = window.slice(-4096);
    };
    proc.stdout.setEncoding('utf8').on('data', add);
    proc.stderr.setEncoding('utf8').on('data', add);
    proc.once('exit', (code, signal) => {
      this.#paused = false;
      this.serving.service.exited(this.name);
      this.exits.push({ code, signal, at: Date.now(), caused: this.#causing });
      this.#causing = false;
      if (this.#stopped) return;
      // the kubelet's part: start it again (a short back-off, so trials stay short)
      void sleep(RESTART_DELAY_MS).then(() => {
        if (!this.#stopped && !this.running) this.start();
      });
    });
  }

  /**
   * Sends `signal` as a fault (the supervisor starts the replica again). SIGTERM is a pod's deletion: the Service
   * stops routing to the replica `endpointsLagMs` later (default at once), as the endpoints learn of it.
   */
  async signal(signal: NodeJS.Signals, options: { readonly endpointsLagMs?: number } = {}): Promise<void> {
    if (!this.running || !this.proc) return;
    this.#causing = true;
    const exited = new Promise((r) => this.proc?.once('exit', r));
    if (signal === 'SIGTERM') this.serving.service.terminating(this.name, options.endpointsLagMs ?? 0);
    this.proc.kill(signal);
    this.resume(); // a stopped process handles the signal once continued (SIGKILL needs no SIGCONT)
    await exited;
  }

  /**
   * Stops it gracefully, as a scale-down does: SIGTERM (SIGKILL after `timeoutMs`), not started again until
   * `start()`. Whether it exited in time.
   */
  async retire(timeoutMs = 10_000): Promise<boolean> {
    this.#stopped = true;
    if (!this.running || !this.proc) return true;
    this.#causing = true;
    const exited = new Promise((r) => this.proc?.once('exit', r));
    this.serving.service.terminating(this.name, 0);
    this.proc.kill('SIGTERM');
    this.resume(); // a stopped process handles its SIGTERM once continued
    const inTime = await Promise.race([exited.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!inTime) {
      this.proc?.kill('SIGKILL');
      await exited;
    }
    return inTime;
  }

  async stop(): Promise<void> {
    await this.retire();
    await this.proxy.close();
  }
}

/** The state letter of a process in /proc (`R`, `S`, `T` stopped, …); undefined if it is gone. */
async function processState(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat?.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

export interface ChaosCluster {
  readonly env: Environment;
  readonly admin: Client;
  readonly auditLog: string;
  readonly replicas: readonly Replica[];
  /** The webhook Service in front of the replicas (admission and conversion, `failurePolicy: Fail`). */
  readonly webhooks: Service;
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
}

const NAMES = ['chaos-a', 'chaos-b', 'chaos-c', 'chaos-d', 'chaos-e', 'chaos-f'];

/** What every replica is made from: the operator's ServiceAccount kubeconfig and token, the serving certificate. */
interface Installed {
  readonly admin: Client;
  readonly kubeconfigText: string;
  readonly token: string;
  readonly certDir: string;
}

/** The sharding component's RBAC (Leases list and delete, patch of AppServices), as a sharded install adds it. */
const SHARDING_RBAC = new URL('../config/sharding/rbac.yaml', import.meta.url);

/**
 * The operator's API, RBAC (and the sharding component's, if `sharded`) and webhook configurations (calling
 * `service`), the chaos namespace, the RBAC in effect.
 */
async function install(env: Environment, service: Service, sharded: boolean): Promise<Installed> {
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
  return { admin, kubeconfigText: await readFile(sa.path, 'utf8'), token: sa.token, certDir: hooks.certDir };
}

/** A replica named `name` behind a fault proxy of its own, started. */
async function startReplica(
  env: Environment,
  service: Service,
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
  const r = new Replica(name, proxy, kubeconfig, serving, mode);
  r.secrets.push(installed.token);
  r.start();
  return r;
}

export async function chaosCluster(options: ChaosClusterOptions = {}): Promise<ChaosCluster> {
  const mode: ReplicaMode = options.sharded ? 'sharded' : 'leader';
  const policyDir = options.sharded ? await mkdtemp(join(tmpdir(), 'chaos-audit-')) : undefined;
  if (policyDir) await writeFile(join(policyDir, 'audit-policy.yaml'), shardedAuditPolicy(OPERATOR_USER));
  const env = await start({
    nodes: 3,
    podsPerNode: 500,
    auditLog: true,
    log: () => {},
    // a later flag wins: the sharded policy replaces the default one
    ...(policyDir ? { apiserverArgs: [`--audit-policy-file=${join(policyDir, 'audit-policy.yaml')}`] } : {}),
  });
  const replicas: Replica[] = [];
  const spawned: Replica[] = [];
  const service = await Service.start();
  const stopAll = async () => {
    await Promise.all([...replicas, ...spawned].map((r) => r.stop()));
    await service.close();
    await env.stop();
    if (policyDir) await rm(policyDir, { recursive: true, force: true });
  };
  try {
    const installed = await install(env, service, options.sharded ?? false);
    const { admin } = installed;
    for (const name of NAMES.slice(0, options.replicas ?? (options.sharded ? 3 : 2)))
      replicas.push(await startReplica(env, service, installed, name, mode));
    // writes of AppServices need the webhooks from here on
    await service.waitReady(replicas.length, 120_000);
    return {
      env,
      admin,
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
