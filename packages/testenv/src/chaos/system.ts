/**
 * @module chaos/system
 * The operator under test as it runs in production, on a local control plane: its CRDs, its RBAC (the ServiceAccount,
 * roles and bindings `opkit generate` writes), and N replicas (default 2) of its command with leader election (or
 * sharded, `SHARDING=true`, default 3, with the same Lease timings for their member Leases), each
 * authenticating as that ServiceAccount through an `ApiFaultProxy` of its own, named by `POD_NAME` (`chaos-0`, …) in
 * `POD_NAMESPACE` (the ServiceAccount's). A supervisor (chaos/replicas) plays the kubelet. The replicas run with
 * metrics and health probes off, a shorter Lease (5 s, renewed within 3 s, tried every 500 ms, so a failover takes
 * seconds, not the default 15 s), and their webhooks served on a loopback port each: when the project has webhook
 * configurations or conversion webhooks, those are pointed at a loopback Service in front of the replicas whose
 * webhook port accepts connections (chaos/service, a `tcpSocket` readiness probe), as a Deployment's webhook Service
 * routes to its ready pods. The supervisor watches each replica's output for the ServiceAccount tokens. For a fleet
 * operator (`members`), its member clusters too (chaos/members): each replica reaches them through proxies of its
 * own, and finds their kubeconfigs in the folder `FLEET_KUBECONFIG_DIR` names.
 *
 * It records every write a replica made (`writes`: which replica, what, when, in which member, as the proxy saw the
 * apiserver apply it), every request an authorizer refused (`denied`), and every holder of the leader-election Lease
 * and of each shard's fence (`leases`, from a watch; chaos/leases), and lets a trial put faults into the replicas'
 * requests (`hooks`).
 *
 * Guarantees: `start()` resolves once the apiserver's authorizer allows what the roles grant (so a Forbidden is the
 * operator's own) and every replica runs; a start that fails part-way stops what it started (replicas, proxies, the
 * webhook Service, with its configurations uninstalled, the members); `stop()` ends the replicas, the proxies, the
 * members and the control plane.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLoopbackServingPki } from '../certs.ts';
import { type CrdInput, installCrds, loadCrds } from '../crds.ts';
import { type Environment, start } from '../environment.ts';
import { makeKubeconfig, writeKubeconfig } from '../kubeconfig.ts';
import { freePorts } from '../ports.ts';
import { ApiFaultProxy, type ProxyAnswer } from './api-proxy.ts';
import { LeaseBook, type LeaseHolder, replicaName } from './leases.ts';
import { ChaosMembers } from './members.ts';
import { type Manifest, Objects } from './objects.ts';
import { installRbac } from './rbac.ts';
import { Replica } from './replicas.ts';
import type { RequestInfo } from './request-info.ts';
import { type ServedWebhooks, serveWebhooks, type WebhookService } from './service.ts';

export { type LeaseHolder, replicaName };

/** How the operator runs: its command, where, and environment variables of its own. */
export interface OperatorCommand {
  /** The program (`process.execPath`, `npx`, …). */
  readonly command: string;
  /** Its arguments (`src/main.ts`). */
  readonly args: readonly string[];
  /** Where it runs (the project). */
  readonly cwd: string;
  /** Variables of its own, over this process's and under the ones the runner sets. */
  readonly env?: Readonly<Record<string, string>>;
}

/** What `ChaosSystem.start` runs. */
export interface SystemOptions {
  readonly operator: OperatorCommand;
  /** The project's CRDs (files, directories or objects, as `start({ crds })` takes). */
  readonly crds: readonly CrdInput[];
  /** The ServiceAccount, roles and bindings the operator runs with. */
  readonly rbac: readonly Manifest[];
  /** Default 2, or 3 when sharded. */
  readonly replicas?: number;
  /** Run it sharded (`SHARDING=true`: every replica reconciles the shards it holds), as docs/sharding.md tells. */
  readonly sharding?: boolean;
  /**
   * A control plane to use (its CRDs are installed as it runs, and it is left running at the end), instead of one of
   * its own; a test that runs several operators shares one this way.
   */
  readonly environment?: Environment;
  /** The operator's MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects (`config/webhook`). */
  readonly webhooks?: readonly Manifest[];
  /** Member clusters of a fleet operator (chaos/members): how many, and their RBAC (`config/fleet`). */
  readonly members?: { readonly count: number; readonly rbac: readonly Manifest[] };
  readonly log?: (line: string) => void;
}

/** One write a replica made that the apiserver applied. */
export interface OperatorWrite {
  /** Which replica (0 for `chaos-0`). */
  readonly replica: number;
  /** What it wrote: verb, resource, namespace, name (a create has no name: it is in the body). */
  readonly info: RequestInfo;
  /** ms since the epoch, when the proxy had the apiserver's answer. */
  readonly at: number;
  /** The member cluster it was made in (chaos/members); absent in the hub. */
  readonly cluster?: string;
}

/** A request of a replica that the apiserver's authorizer refused: a permission the RBAC lacks. */
export interface DeniedRequest {
  readonly replica: number;
  readonly info: RequestInfo;
  /** The apiserver's message (`User "…" cannot patch resource "namespaces" …`). */
  readonly message: string;
  readonly at: number;
  /** The member cluster it was made in; absent in the hub. */
  readonly cluster?: string;
}

/** What a trial puts into the replicas' requests. */
export interface WriteHooks {
  /** An answer of the proxy instead of the apiserver's; `cluster` is a member's name, absent for the hub. */
  answer?(replica: number, info: RequestInfo, cluster?: string): ProxyAnswer | undefined;
  /** Awaited after a write was applied, before the replica has the answer. */
  applied?(replica: number, info: RequestInfo, cluster?: string): void | Promise<void>;
}

/** Lease timings of the replicas: a failover within about 5 s. */
export const CHAOS_LEASE = { duration: '5s', renewDeadline: '3s', retryPeriod: '500ms', durationMs: 5_000 } as const;

/** The running system; see the module comment. */
export class ChaosSystem {
  readonly env: Environment;
  readonly objects: Objects;
  readonly replicas: readonly Replica[];
  readonly proxies: readonly ApiFaultProxy[];
  /** The operator's ServiceAccount, and the user name the apiserver knows it by. */
  readonly serviceAccount: { readonly namespace: string; readonly name: string; readonly user: string };
  readonly writes: OperatorWrite[] = [];
  /** Requests the authorizer refused (chaos/api-proxy `onDenied`), in order. */
  readonly denied: DeniedRequest[] = [];
  /** Who held the leader-election Lease and, when sharded, each shard's fence (chaos/leases). */
  readonly leases: LeaseBook;
  /** Whether the replicas run sharded. */
  readonly sharded: boolean;
  hooks: WriteHooks | undefined;
  /** The member clusters, for a fleet operator (chaos/members). */
  fleet: ChaosMembers | undefined;
  readonly #watch = new AbortController();
  #ownsEnvironment = true;
  #webhooks: ServedWebhooks | undefined;

  private constructor(
    env: Environment,
    sa: ChaosSystem['serviceAccount'],
    replicas: readonly Replica[],
    proxies: readonly ApiFaultProxy[],
    sharded: boolean,
    count: number,
  ) {
    this.env = env;
    this.leases = new LeaseBook(count); // the replicas are made into `replicas` after this
    this.sharded = sharded;
    this.objects = new Objects(env.api);
    this.serviceAccount = sa;
    this.replicas = replicas;
    this.proxies = proxies;
  }

  /** Starts the control plane, installs CRDs and RBAC, and starts the replicas; see the module comment. */
  static async start(options: SystemOptions): Promise<ChaosSystem> {
    const log = options.log ?? (() => {});
    const given = options.environment;
    const env = given ?? (await start({ crds: options.crds, nodes: 1, log }));
    try {
      if (given !== undefined) {
        const settled = await installCrds(given.api, await loadCrds(options.crds), 60_000);
        if (settled > Date.now()) await sleep(settled - Date.now());
      }
      const system = await ChaosSystem.#boot(env, options);
      system.#ownsEnvironment = given === undefined;
      return system;
    } catch (err) {
      if (given === undefined) await env.stop();
      throw err;
    }
  }

  static async #boot(env: Environment, options: SystemOptions): Promise<ChaosSystem> {
    const objects = new Objects(env.api);
    const sa = await installRbac(env, objects, options.rbac);
    const { token } = await env.kubeconfigFor({ name: sa.name, namespace: sa.namespace });
    const dir = join(env.dir, `chaos-${randomBytes(3).toString('hex')}`);
    await mkdir(dir, { recursive: true });
    const pki = await createLoopbackServingPki(dir);
    const serving = { caPem: pki.ca.certPem, certPem: pki.serving.certPem, keyPem: pki.serving.keyPem };
    const count = options.replicas ?? (options.sharding ? 3 : 2);
    const webhookPorts = await freePorts(count);
    const webhooks = await serveWebhooks(env, options);
    const replicas: Replica[] = [];
    const proxies: ApiFaultProxy[] = [];
    const system = new ChaosSystem(env, sa, replicas, proxies, options.sharding === true, count);
    system.#webhooks = webhooks;
    try {
      if (options.members !== undefined && options.members.count > 0)
        system.fleet = await ChaosMembers.start({
          ...options.members,
          crds: options.crds,
          replicas: count,
          dir,
          serving,
          answer: (r, info, member) => system.hooks?.answer?.(r, info, member),
          record: (r, info, member) => system.record(r, info, member),
          denied: (r, info, message, member) => system.deny(r, info, message, member),
          ...(options.log ? { log: options.log } : {}),
        });
      await ChaosSystem.#replicas(system, { options, dir, serving, webhookPorts, token, replicas, proxies });
      system.#watchLeases();
      for (const r of replicas) r.start();
      await webhooks?.listening();
      return system;
    } catch (err) {
      await system.#release(); // what was started of it; the control plane is the caller's
      throw err;
    }
  }

  /** Makes each replica: its fault proxy, its kubeconfig, its webhook endpoint (not started). */
  static async #replicas(
    system: ChaosSystem,
    o: {
      options: SystemOptions;
      dir: string;
      serving: { caPem: string; certPem: string; keyPem: string };
      /** One per replica. */
      webhookPorts: readonly number[];
      token: string;
      /** The system's arrays, filled here. */
      replicas: Replica[];
      proxies: ApiFaultProxy[];
    },
  ): Promise<void> {
    const { env, serviceAccount: sa } = system;
    const { options, dir, serving, webhookPorts, token, replicas, proxies } = o;
    const webhooks = system.#webhooks;
    for (let i = 0; i < webhookPorts.length; i++) {
      const proxy = await ApiFaultProxy.start({
        target: { url: env.server, caPem: env.caPem },
        serving,
        answer: (info) => system.hooks?.answer?.(i, info),
        onApplied: (info) => system.record(i, info),
        onDenied: (info, message) => system.deny(i, info, message),
      });
      proxies.push(proxy);
      const kubeconfig = join(dir, `kubeconfig-${replicaName(i)}`);
      const user = { user: sa.user, credentials: { kind: 'token', token } as const, namespace: sa.namespace };
      await writeKubeconfig(
        kubeconfig,
        makeKubeconfig({ name: 'chaos', server: proxy.url, caPem: proxy.caPem, ...user }),
      );
      const at = {
        namespace: sa.namespace,
        kubeconfig,
        certDir: webhooks?.certDir ?? dir,
        webhookPort: webhookPorts[i] ?? 0,
        webhooks: !!webhooks,
        sharding: options.sharding === true,
        fleet: system.fleet?.folders[i],
      };
      const spec = replicaSpec(options.operator, i, at);
      const events = webhooks?.service.add({ name: spec.name, port: at.webhookPort });
      const secrets = [token, ...(system.fleet?.tokens ?? [])];
      replicas.push(new Replica(spec, { secrets, ...(events ? { events } : {}) }));
    }
  }

  /** Called by a proxy once the apiserver applied a write: recorded, then the trial's hook awaited. */
  async record(replica: number, info: RequestInfo, cluster?: string): Promise<void> {
    this.writes.push({ replica, info, at: Date.now(), ...(cluster !== undefined ? { cluster } : {}) });
    await this.hooks?.applied?.(replica, info, cluster);
  }

  /** Called by a proxy when the authorizer refused a request of replica `replica`. */
  deny(replica: number, info: RequestInfo, message: string, cluster?: string): void {
    this.denied.push({ replica, info, message, at: Date.now(), ...(cluster !== undefined ? { cluster } : {}) });
  }

  /** The leader-election Lease's holders, in order. */
  get holders(): readonly LeaseHolder[] {
    return this.leases.leader;
  }

  /** The current holder of the Lease, if it is a replica's process that runs now and is not paused. */
  leader(): { readonly replica: number; readonly since: number } | undefined {
    const h = this.holders.at(-1);
    return h === undefined ? undefined : this.#live(h);
  }

  /**
   * Whether the operator is in charge: unsharded, a replica leads (`leader()`); sharded, every shard's fence is held by
   * a replica's process that runs now and is not paused (with members, every fence of the fleet's ring too). `since`:
   * when that last changed.
   */
  inCharge(): { readonly since: number } | undefined {
    if (!this.sharded) return this.leader();
    const fleet = this.fleet ? [...this.leases.fleetFences.values()] : [];
    if (this.fleet && fleet.length === 0) return undefined;
    const fences = [...this.leases.fences.values(), ...fleet];
    let since = 0;
    for (const history of fences) {
      const h = history.at(-1);
      if (h === undefined || this.#live(h) === undefined) return undefined;
      since = Math.max(since, h.at);
    }
    return fences.length > 0 ? { since } : undefined;
  }

  /** `h` as the replica's process that runs now (its identity first seen after the process started), if it is. */
  #live(h: LeaseHolder): { readonly replica: number; readonly since: number } | undefined {
    if (h.replica === undefined) return undefined;
    const r = this.replicas[h.replica];
    if (r === undefined || !r.running || r.paused) return undefined;
    const first = this.leases.firstSeen(h.identity);
    return first >= (r.starts.at(-1) ?? Number.POSITIVE_INFINITY) ? { replica: h.replica, since: first } : undefined;
  }

  /** The loopback Service in front of the replicas' webhook servers, when the project has webhooks. */
  get webhookService(): WebhookService | undefined {
    return this.#webhooks?.service;
  }

  /** Stops the replicas, the proxies, the Lease watch and the control plane (unless it was given). */
  async stop(): Promise<void> {
    await this.#release();
    if (this.#ownsEnvironment) await this.env.stop();
  }

  /** Stops the Lease watch, the replicas, the proxies and the webhooks (their configurations uninstalled). */
  async #release(): Promise<void> {
    this.#watch.abort();
    await Promise.all(this.replicas.map((r) => r.close()));
    await Promise.all(this.proxies.map((p) => p.close()));
    await this.#webhooks?.stop();
    await this.fleet?.stop();
  }

  #watchLeases(): void {
    const path = `/apis/coordination.k8s.io/v1/namespaces/${this.serviceAccount.namespace}/leases?watch=1`;
    const observe = (o: { metadata?: { name?: string; labels?: Record<string, string> }; spec?: unknown }) => {
      const name = o.metadata?.name ?? '';
      const holder = String((o.spec as { holderIdentity?: string } | undefined)?.holderIdentity ?? '');
      this.leases.observe({ name, labels: o.metadata?.labels ?? {}, holder }, Date.now());
    };
    const loop = async () => {
      while (!this.#watch.signal.aborted) {
        await this.env.api
          .watch(path, (e) => observe(e.object as Parameters<typeof observe>[0]), {
            signal: this.#watch.signal,
            unref: true,
          })
          .catch(() => sleep(200));
      }
    };
    void loop();
  }
}

/** The environment of replica `i`: leader election in the ServiceAccount's namespace, servers off or on loopback. */
function replicaSpec(
  op: OperatorCommand,
  i: number,
  at: {
    namespace: string;
    kubeconfig: string;
    certDir: string;
    webhookPort: number;
    webhooks: boolean;
    sharding: boolean;
    /** The folder of its members' kubeconfigs, for a fleet operator. */
    fleet: string | undefined;
  },
) {
  return {
    name: replicaName(i),
    command: op.command,
    args: op.args,
    cwd: op.cwd,
    env: {
      ...op.env,
      KUBECONFIG: at.kubeconfig,
      POD_NAME: replicaName(i),
      POD_NAMESPACE: at.namespace,
      LEADER_ELECT: 'true',
      LEADER_ELECTION_LEASE_DURATION: CHAOS_LEASE.duration,
      LEADER_ELECTION_RENEW_DEADLINE: CHAOS_LEASE.renewDeadline,
      LEADER_ELECTION_RETRY_PERIOD: CHAOS_LEASE.retryPeriod,
      METRICS_BIND_ADDRESS: '0',
      HEALTH_PROBE_BIND_ADDRESS: '0',
      WEBHOOK_BIND_ADDRESS: `127.0.0.1:${at.webhookPort}`,
      WEBHOOK_CERT_DIR: at.certDir,
      // kubebuilder's switch (a scaffolded main.ts serves its webhooks unless it is false)
      ...(at.webhooks ? { ENABLE_WEBHOOKS: 'true' } : {}),
      // the Lease timings above are the member Leases' too: shards move within about 5 s
      ...(at.sharding ? { SHARDING: 'true' } : {}),
      ...(at.fleet !== undefined ? { FLEET_KUBECONFIG_DIR: at.fleet } : {}),
    },
  };
}
