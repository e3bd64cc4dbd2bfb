/**
 * @module environment
 * `start()` brings up a real control plane — etcd, kube-apiserver (TLS, client-certificate admin, RBAC,
 * service-account tokens), kube-controller-manager (garbage collector, namespaces, service accounts and tokens,
 * workload controllers, the volume controllers and the host-path provisioner behind two StorageClasses),
 * kube-scheduler and kwok with N fake nodes — and returns an `Environment`.
 *
 * Guarantees:
 * - Every environment has its own run directory and free ports; several run at once without interfering.
 * - `start()` resolves only when the apiserver is ready, every node is Ready and the `default` ServiceAccount exists
 *   (pods can be created); a failure names the component, its exit code and the tail of its log, and leaves nothing
 *   running.
 * - `stop()` ends every child process, removes the directories of the volumes the cluster provisioned (volumes.ts)
 *   and removes the run directory. The components do not keep the owning process
 *   alive: a test process that ends without `stop()` (a failed test, an unhandled error) exits, SIGKILLs them on its
 *   way out, and its watchdog removes the volume and run directories. If the owning process dies instead, the
 *   watchdog process ends the components; a later `start()` also reaps run directories whose owner is gone.
 * - The CRDs of `crds` are installed after the apiserver and before the controllers start, and are Established and
 *   served when `start()` resolves (crds.ts); the garbage collector knows them from its start.
 * - The garbage collector handles a CRD installed after `start()` as soon as it is served: kube-controller-manager is
 *   restarted for it (crd-sync.ts; `syncGarbageCollector: false` turns it off).
 * - With `keepDir`, the run directory is marked kept (a `KEPT` file) on stop, or by the watchdog if the owner dies:
 *   neither the watchdog nor a later `start()` in any process removes it; only the user does.
 * The pieces: the components' flags, ports, probes and files are control-plane.ts, each process is a `Component`
 * (component.ts), the run directory, its state file, the watchdog and stale-run reaping are run-dir.ts, etcd's HTTP
 * gateway is etcd.ts, the fake nodes nodes.ts, the StorageClasses and volume directories volumes.ts, ServiceAccount
 * kubeconfigs service-account.ts; this module orders them.
 * Caveats: the TaintNodesByCondition admission plugin is disabled (no node-lifecycle controller runs, so a new node's
 * not-ready taint would never be lifted); client rate limits of the controller-manager and scheduler are raised so
 * that benchmarks with tens of thousands of pods are not limited by them.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from './api.ts';
import { type BinaryPaths, defaultLog, resolveBinaries } from './binaries.ts';
import { type CertPair, createPki, type Pki } from './certs.ts';
import { Component } from './component.ts';
import {
  allocatePorts,
  type ComponentId,
  componentDefinitions,
  etcdUrl,
  IDENTITIES,
  type Ports,
  writeClientKubeconfigs,
  writeComponentFiles,
} from './control-plane.ts';
import { CrdSync } from './crd-sync.ts';
import { installCrds, type LoadedCrd, loadCrds } from './crds.ts';
import { isTestenvError, TestenvError } from './errors.ts';
import { compactEtcd, etcdValue } from './etcd.ts';
import type { Kubeconfig } from './kubeconfig.ts';
import { clusterSettled, createFakeNodes } from './nodes.ts';
import { cacheRoot } from './paths.ts';
import { closeRunDir, makeRunDir, reapStale, Watchdog, writeOwner, writeState } from './run-dir.ts';
import { type ServiceAccountKubeconfig, type ServiceAccountRef, serviceAccountKubeconfig } from './service-account.ts';
import type { StartOptions } from './start-options.ts';
import { createStorageClasses, provisionedVolumeDirs, removeVolumeDirs, shareVolumeRoot } from './volumes.ts';
import { type InstalledWebhooks, type InstallWebhooksOptions, installWebhooks } from './webhooks.ts';

export type { StartOptions } from './start-options.ts';

/** Starts a control plane. Retries with fresh ports (`PortInUse`) if another process took one of them first. */
export async function start(options: StartOptions = {}): Promise<Environment> {
  const log = options.log ?? defaultLog;
  const nodes = options.nodes ?? 3;
  if (!Number.isInteger(nodes) || nodes < 0) {
    throw new TestenvError('InvalidOption', `nodes must be a whole number ≥ 0, got ${nodes}`);
  }
  // read and checked before anything starts: a wrong path fails at once
  const crds = await loadCrds(options.crds ?? []);
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
      await env.boot(crds);
      return env;
    } catch (err) {
      await env.stop().catch(() => {});
      if (!isTestenvError(err, 'PortInUse') || attempt >= 3) throw err;
      log(`a port was taken by another process; retrying (${attempt}/3)`);
    }
  }
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
  #ports: Ports | undefined;
  #pki: Pki | undefined;
  #api: ApiClient | undefined;
  #watchdog: Watchdog | undefined;
  #crdSync: CrdSync | undefined;
  /** Component restarts, stops and starts, one at a time (a test's and the CRD sync's). */
  #ops: Promise<unknown> = Promise.resolve();
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
  async boot(crds: readonly LoadedCrd[] = []): Promise<void> {
    const t0 = performance.now();
    await writeOwner(this.dir);
    this.#watchdog = new Watchdog(this.dir, this.#options.keepDir === true);
    process.on('exit', this.#onExit);
    const phases: string[] = [];
    let mark = t0;
    const phase = async (name: string, step: () => Promise<unknown>) => {
      await step();
      phases.push(`${name}: ${((performance.now() - mark) / 1000).toFixed(1)} s`);
      mark = performance.now();
    };
    await phase('certificates', async () => {
      await this.#prepare();
      await shareVolumeRoot();
    });
    await phase('etcd', () => this.#component('etcd').start());
    await phase('apiserver', () => this.#component('kube-apiserver').start());
    // before the controllers: kube-controller-manager's garbage collector finds the CRDs' kinds at its start
    let settled = 0; // when the apiserver's hold on the new kinds' first creates ends (crds.ts `installCrds`)
    const timeout = this.#options.startTimeoutMs ?? 60_000;
    if (crds.length > 0) await phase('crds', async () => (settled = await installCrds(this.api, crds, timeout)));
    await phase('controllers', () =>
      Promise.all([
        createStorageClasses(this.api),
        ...(['kube-controller-manager', 'kube-scheduler', 'kwok'] as const).map((id) => this.#component(id).start()),
      ]),
    );
    await phase('nodes', async () => {
      await createFakeNodes(this.api, this.nodes, this.#options.podsPerNode ?? 110);
      await this.#waitFor('every node Ready and the default ServiceAccount', () =>
        clusterSettled(this.api, this.nodes),
      );
    });
    if (settled > Date.now()) await phase('the new kinds settle', () => sleep(settled - Date.now()));
    await this.#writeState();
    if (this.#options.syncGarbageCollector !== false) {
      const kcm = this.#component('kube-controller-manager');
      const restart = async () => {
        if (kcm.pid === undefined || this.#stopped) return false;
        await kcm.stop();
        await this.#startComponent('kube-controller-manager', kcm);
        return true;
      };
      this.#crdSync = new CrdSync({ api: this.api, log: this.#log, restart: () => this.#serial(restart) });
      await this.#crdSync.start();
    }
    this.#log(
      `control plane ready in ${((performance.now() - t0) / 1000).toFixed(1)} s (${phases.join(', ')}) at ${this.server} (${this.dir})`,
    );
  }

  /**
   * Restarts one component with the same flags, ports and data (etcd data survives an apiserver or etcd restart).
   * `downMs` keeps it stopped for that long first, to simulate an outage.
   */
  async restart(id: ComponentId, options: { downMs?: number } = {}): Promise<void> {
    const c = this.#component(id);
    await this.#serial(async () => {
      await c.stop();
      if (options.downMs) await sleep(options.downMs);
      await this.#startComponent(id, c);
    });
  }

  /** Stops one component (for fault tests); `startComponent` brings it back. */
  async stopComponent(id: ComponentId): Promise<void> {
    const c = this.#component(id);
    await this.#serial(async () => {
      await c.stop();
      await this.#writeState();
    });
  }

  /**
   * Starts a component that `stopComponent` stopped, with the same flags, ports and data; resolves once it is ready,
   * else fails as `start()` does (`ComponentFailed`, `PortInUse`, `StartTimeout`).
   */
  async startComponent(id: ComponentId): Promise<void> {
    const c = this.#component(id);
    await this.#serial(() => this.#startComponent(id, c));
  }

  async #startComponent(id: ComponentId, c: Component): Promise<void> {
    if (id === 'kube-controller-manager') this.#crdSync?.started();
    await c.start();
    await this.#writeState();
  }

  /** Runs `op` after every component operation before it has ended. */
  #serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.#ops.then(op, op);
    this.#ops = run.catch(() => {});
    return run;
  }

  /**
   * The JSON etcd stores for `key` (e.g. `/registry/<group>/<plural>/<namespace>/<name>` for a custom resource, which
   * the apiserver stores as JSON), or undefined when there is none: what is really stored, e.g. in which version.
   */
  async etcdValue(key: string): Promise<unknown> {
    return etcdValue(this.#etcdUrl(), key);
  }

  /**
   * Compacts etcd's history up to its current revision, so a watch resumed from an older resourceVersion gets
   * 410 Gone once the apiserver's watch cache no longer covers it (restart the apiserver to empty that cache).
   * Returns the revision compacted to.
   */
  async compactEtcd(): Promise<number> {
    return compactEtcd(this.#etcdUrl());
  }

  /**
   * A kubeconfig that authenticates as a ServiceAccount (created if missing) with a bound token from the
   * TokenRequest API, so code under test runs with only the permissions RBAC gives that account.
   */
  async kubeconfigFor(sa: ServiceAccountRef): Promise<ServiceAccountKubeconfig> {
    return serviceAccountKubeconfig({ api: this.api, server: this.server, caPem: this.caPem, dir: this.dir }, sa);
  }

  /**
   * Stops every component (kwok, scheduler, controller-manager, apiserver, etcd), removes the directories of the
   * volumes the cluster provisioned, and removes the run directory (with `keepDir`, marks it kept instead; the volume
   * directories go in both cases).
   */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#crdSync?.stop();
    const stopAll = async (ids: readonly ComponentId[]) =>
      Promise.all(ids.map((id) => this.#components.get(id)?.stop()));
    await stopAll(['kwok', 'kube-scheduler', 'kube-controller-manager']);
    // The provisioner has stopped: list its volumes while the apiserver serves, else find them in etcd's files.
    const volumes = this.#components.get('kube-apiserver')?.pid
      ? await provisionedVolumeDirs(this.api).catch(() => undefined)
      : undefined;
    await stopAll(['kube-apiserver']);
    await stopAll(['etcd']);
    this.#api?.close();
    await removeVolumeDirs(this.dir, volumes);
    process.off('exit', this.#onExit);
    await closeRunDir(this.dir, this.#options.keepDir === true, () => this.#watchdog?.done());
  }

  /** `stop()`, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** Picks the ports, writes the PKI, kubeconfigs and component files, and defines the components. */
  async #prepare(): Promise<void> {
    const ports = await allocatePorts();
    this.#ports = ports;
    this.server = `https://127.0.0.1:${ports.apiserver}`;
    const pki = await createPki(this.dir, IDENTITIES, cacheRoot());
    this.#pki = pki;
    const clients = await writeClientKubeconfigs(this.dir, this.server, pki, this.kubeconfigPath);
    this.kubeconfig = clients.admin;
    const admin = pki.clients.admin as CertPair;
    this.#api = new ApiClient(this.server, pki.ca.certPem, {
      kind: 'certificate',
      certPem: admin.certPem,
      keyPem: admin.keyPem,
    });
    await writeComponentFiles(this.dir, this.binaries.kwokStages, this.auditLogPath !== undefined);
    const timeout = this.#options.startTimeoutMs ?? 60_000;
    const plan = {
      dir: this.dir,
      binaries: this.binaries,
      ports,
      pki,
      kubeconfigs: clients.paths,
      auditLogPath: this.auditLogPath,
      apiserverArgs: this.#options.apiserverArgs ?? [],
      apiReady: async () => (await this.api.request({ path: '/readyz', timeoutMs: 2_000 })).status === 200,
    };
    for (const { id, binary, args, probe, port } of componentDefinitions(plan)) {
      const c = new Component({
        name: id,
        binary,
        args,
        logFile: join(this.dir, `${id}.log`),
        probe,
        port,
        startTimeoutMs: timeout,
      });
      c.onSpawn = (pid) => this.#watchdog?.spawned(pid);
      this.#components.set(id, c);
    }
  }

  #component(id: ComponentId): Component {
    const c = this.#components.get(id);
    if (!c) throw new TestenvError('NotRunning', `${id} is not part of this environment`);
    return c;
  }

  #etcdUrl(): string {
    if (!this.#ports) throw new TestenvError('NotRunning', 'the environment is not running');
    return etcdUrl(this.#ports);
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
    await writeState(this.dir, {
      ownerPid: process.pid,
      server: this.server,
      kubeconfigPath: this.kubeconfigPath,
      pids: this.pids,
      ports: this.#ports ?? {},
      nodes: this.nodes,
      startedAt: new Date().toISOString(),
    });
  }
}
