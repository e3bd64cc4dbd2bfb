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
 */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { KubeObject } from '@opkit/runtime';
import { Client, loadConfig, resource } from '@opkit/runtime/client';
import { type Lease, Leases, Namespaces } from '@opkit/runtime/kinds';
import { type Environment, FaultProxy, start, targetOf } from '@opkit/testenv';
import { installApiAndRbac, installObjects, NAME, NAMESPACE } from '../src/install.ts';
import { Service } from './service.ts';

export const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
/** The operator runs from this repository's sources: the workspace packages' source export condition, alone. */
export const SOURCE_CONDITION = '--conditions=@opkit/source';
export const CHAOS_NAMESPACE = 'chaos';
export const OPERATOR_USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;
const LEASE = { namespace: NAMESPACE, name: `${NAME}-leader` };

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
  /** Strings that must never appear in the output (the ServiceAccount token); `leaks` lists any that did. */
  readonly secrets: string[] = [];
  readonly #leaked = new Set<string>();
  #tail = '';
  #causing = false;
  #stopped = false;

  constructor(name: string, proxy: FaultProxy, kubeconfig: string, serving: Serving) {
    this.name = name;
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

  start(): void {
    const proc = spawn(
      process.execPath,
      [
        MAIN,
        '--kubeconfig',
        this.kubeconfig,
        '--leader-elect',
        '--leader-election-namespace',
        NAMESPACE,
        '--metrics-bind-address',
        '0',
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
        env: { ...process.env, POD_NAME: this.name, NODE_OPTIONS: SOURCE_CONDITION, ENABLE_WEBHOOKS: 'true' },
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
      this.serving.service.exited(this.name);
      this.exits.push({ code, signal, at: Date.now(), caused: this.#causing });
      this.#causing = false;
      if (this.#stopped) return;
      // the kubelet's part: start it again (a short back-off, so trials stay short)
      void sleep(1_000).then(() => {
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
    await exited;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (!this.running || !this.proc) return;
    const exited = new Promise((r) => this.proc?.once('exit', r));
    this.serving.service.terminating(this.name, 0);
    this.proc.kill('SIGTERM');
    await Promise.race([exited, sleep(10_000).then(() => this.proc?.kill('SIGKILL'))]);
    await this.proxy.close();
  }
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
async function rbacEffective(admin: Client): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const review = await admin.create(SubjectAccessReviews, {
      metadata: {},
      spec: {
        user: OPERATOR_USER,
        resourceAttributes: { namespace: NAMESPACE, verb: 'get', group: 'coordination.k8s.io', resource: 'leases' },
      },
    });
    if (review.status?.allowed) return;
    await sleep(100);
  }
  throw new Error('the operator ServiceAccount was still not allowed to get its Lease after 10 s');
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

export async function chaosCluster(options: { replicas?: number } = {}): Promise<ChaosCluster> {
  const env = await start({ nodes: 3, podsPerNode: 500, auditLog: true, log: () => {} });
  const replicas: Replica[] = [];
  const service = await Service.start();
  try {
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'chaos-admin' });
    await installApiAndRbac(admin, { webhooks: 'none' });
    // the configurations and the CRD's conversion call the Service, with the CA of the replicas' certificate
    const hooks = await env.installWebhooks({
      configurations: (await installObjects()).filter((o) => o.kind?.endsWith('WebhookConfiguration')),
      conversions: ['appservices.app.example.com'],
      port: service.port,
    });
    await admin.create(Namespaces, { metadata: { name: CHAOS_NAMESPACE } });
    const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    await rbacEffective(admin);
    const text = await readFile(sa.path, 'utf8');
    for (const name of ['chaos-a', 'chaos-b'].slice(0, options.replicas ?? 2)) {
      const proxy = await FaultProxy.start({ target: targetOf(env.server) });
      const kubeconfig = join(env.dir, `kubeconfig-${name}`);
      await writeFile(kubeconfig, text.replace(env.server, proxy.url), { mode: 0o600 });
      const serving = { service, webhookPort: await freePort(), healthPort: await freePort(), certDir: hooks.certDir };
      const r = new Replica(name, proxy, kubeconfig, serving);
      r.secrets.push(sa.token);
      r.start();
      replicas.push(r);
    }
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
        const lease = await admin.get(Leases, LEASE).catch(() => undefined);
        const holder = lease?.spec?.holderIdentity ?? '';
        return replicas.find((r) => holder.startsWith(`${r.name}_`));
      },
      async stop() {
        await Promise.all(replicas.map((r) => r.stop()));
        await service.close();
        admin.close();
        await env.stop();
      },
    };
  } catch (err) {
    await Promise.all(replicas.map((r) => r.stop()));
    await service.close();
    await env.stop();
    throw err;
  }
}
