/**
 * @module scenarios/converge
 * One system converging AppServices from zero on a fresh control plane: `crs` AppServices × `replicas` pods created
 * at once (32 writers), until every status reports its pods ready for the current generation. Measured from outside
 * the system: wall time and per-AppService latency (create → converged status seen by a watching client), its API
 * requests per AppService by verb (apiserver audit log, filtered by its ServiceAccount), its peak RSS and CPU seconds
 * (/proc; not for the in-process floor), then its writes during `idleSeconds` of idleness (must be 0).
 * The floor performs the minimum writes the job needs — the pods, then one status write per AppService once its pods
 * are ready — at full concurrency (64 in flight), as the same ServiceAccount.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AppService, AppServices, installApiAndRbac, NAME, NAMESPACE } from '@opkit/appservice';
import {
  Cache,
  Client,
  ClusterRoleBindings,
  ClusterRoles,
  loadConfig,
  Namespaces,
  type Pod,
  Pods,
} from '@opkit/runtime';
import { start } from '@opkit/testenv';
import { auditEvents, auditOffset, countByVerb, WRITE_VERBS } from '../audit.ts';
import { type PeerName, startPeer } from '../peers.ts';
import { cpuSeconds, rssBytes } from '../proc.ts';
import { round, summarize } from '../stats.ts';

const USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;
export type SystemName = PeerName | 'floor';

export interface ConvergeResult {
  readonly system: SystemName;
  readonly crs: number;
  readonly replicas: number;
  readonly workers: number;
  readonly seconds: number;
  readonly latencyP50Seconds: number;
  readonly latencyP99Seconds: number;
  readonly requestsPerCR: number;
  readonly requestsPerCRByVerb: Record<string, number>;
  readonly peakRssMiB: number | null;
  readonly cpuSeconds: number | null;
  readonly idleSeconds: number;
  readonly idleWrites: number;
}

export interface ConvergeOptions {
  readonly system: SystemName;
  readonly crs: number;
  readonly replicas: number;
  readonly workers: number;
  readonly idleSeconds: number;
  readonly goBinary?: string;
  readonly log: (line: string) => void;
}

export async function convergeScenario(o: ConvergeOptions): Promise<ConvergeResult> {
  const pods = o.crs * o.replicas;
  const env = await start({ nodes: 3, podsPerNode: Math.ceil(pods / 3) + 100, auditLog: true, log: () => {} });
  const audit = env.auditLogPath as string;
  let proc: ChildProcess | undefined;
  const ctl = new AbortController();
  try {
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'bench-writer' });
    await installApiAndRbac(admin);
    await grantPeerStatusUpdates(admin);
    await admin.create(Namespaces, { metadata: { name: 'bench' } });
    const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    if (o.system !== 'floor') proc = await startPeer(o.system, sa.path, o.workers, o.goBinary);
    const pid = proc?.pid;
    let peakRss = 0;
    const sampler = setInterval(async () => {
      if (pid) peakRss = Math.max(peakRss, await rssBytes(pid));
    }, 200);
    const observer = new Cache({ client: admin, namespace: 'bench' });
    observer.start(ctl.signal);
    const inf = observer.informer(AppServices);
    await inf.waitForSync();
    const createdAt = new Map<string, number>();
    const convergedAt = new Map<string, number>();
    const check = (a: AppService) => {
      const name = a.metadata.name as string;
      if (convergedAt.has(name) || !createdAt.has(name)) return;
      const s = a.status;
      if (
        s?.observedGeneration === a.metadata.generation &&
        s?.readyReplicas === o.replicas &&
        s.replicas === o.replicas
      ) {
        convergedAt.set(name, performance.now());
      }
    };
    inf.addEventHandler({ add: check, update: (_old, a) => check(a) });
    await sleep(2_000); // the system is up and synced
    const cpu0 = pid ? await cpuSeconds(pid) : 0;
    const offset0 = await auditOffset(audit);
    const t0 = performance.now();
    const floor =
      o.system === 'floor'
        ? floorWriter(new Client(await loadConfig({ path: sa.path })), o.replicas, ctl.signal)
        : undefined;
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < o.crs) {
          const name = `app-${next++}`;
          createdAt.set(name, performance.now());
          const created = await admin.create(AppServices, {
            metadata: { name, namespace: 'bench' },
            spec: { replicas: o.replicas, image: 'busybox' },
          } as AppService);
          floor?.add(created);
        }
      }),
    );
    o.log(`${o.system}: created ${o.crs} AppServices in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    while (convergedAt.size < o.crs) {
      await sleep(250);
      if (proc && proc.exitCode !== null) throw new Error(`${o.system} exited (${proc.exitCode})`);
      if (performance.now() - t0 > 20 * 60_000)
        throw new Error(`${o.system}: not converged after 20 minutes (${convergedAt.size}/${o.crs})`);
    }
    const seconds = (performance.now() - t0) / 1000;
    await sleep(500);
    const offset1 = await auditOffset(audit);
    const cpu = pid ? (await cpuSeconds(pid)) - cpu0 : null;
    o.log(`${o.system}: converged in ${seconds.toFixed(1)} s; idle for ${o.idleSeconds} s`);
    await sleep(o.idleSeconds * 1000);
    const idle = await auditEvents(audit, offset1, undefined, USER);
    const idleWrites = idle.filter((e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases').length;
    const busy = await auditEvents(audit, offset0, offset1, USER);
    clearInterval(sampler);
    const latencies = [...convergedAt]
      .map(([name, at]) => (at - (createdAt.get(name) ?? at)) / 1000)
      .sort((a, b) => a - b);
    const perCR: Record<string, number> = {};
    for (const [verb, n] of Object.entries(countByVerb(busy))) perCR[verb] = round(n / o.crs, 2);
    admin.close();
    return {
      system: o.system,
      crs: o.crs,
      replicas: o.replicas,
      workers: o.workers,
      seconds: round(seconds, 2),
      latencyP50Seconds: round(summarize(latencies).median, 2),
      latencyP99Seconds: round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0, 2),
      requestsPerCR: round(busy.length / o.crs, 2),
      requestsPerCRByVerb: perCR,
      peakRssMiB: pid ? round(peakRss / 2 ** 20, 1) : null,
      cpuSeconds: cpu === null ? null : round(cpu, 2),
      idleSeconds: o.idleSeconds,
      idleWrites,
    };
  } finally {
    ctl.abort();
    if (proc && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => proc?.once('exit', r));
    }
    await env.stop();
  }
}

/**
 * The floor: for each AppService added, its pods created at once (64 requests in flight overall); a pod watch tells
 * when all of an AppService's pods are ready, then its status is written once.
 */
function floorWriter(client: Client, replicas: number, signal: AbortSignal) {
  const cache = new Cache({ client, namespace: 'bench' });
  cache.start(signal);
  const podInf = cache.informer(Pods);
  const owners = new Map<string, AppService>();
  const done = new Set<string>();
  const queue: (() => Promise<void>)[] = [];
  let inFlight = 0;
  const pump = () => {
    while (inFlight < 64 && queue.length > 0) {
      const job = queue.shift() as () => Promise<void>;
      inFlight += 1;
      void job().finally(() => {
        inFlight -= 1;
        pump();
      });
    }
  };
  const maybeDone = (pod: Pod) => {
    const uid = pod.metadata.ownerReferences?.[0]?.uid;
    const app = uid ? owners.get(uid) : undefined;
    if (!app || done.has(uid as string)) return;
    const mine = podInf.store.byIndex('controller', uid as string);
    const ready = mine.filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (ready.length < replicas) return;
    done.add(uid as string);
    queue.push(async () => {
      await client.patchStatus(
        AppServices,
        { namespace: 'bench', name: app.metadata.name ?? '' },
        {
          status: {
            replicas,
            readyReplicas: replicas,
            updatedReplicas: replicas,
            podNames: mine.map((p) => p.metadata.name ?? '').sort(),
            observedGeneration: app.metadata.generation ?? 1,
          },
        },
      );
    });
    pump();
  };
  podInf.addEventHandler({ add: maybeDone, update: (_o, p) => maybeDone(p) });
  return {
    add(app: AppService) {
      owners.set(app.metadata.uid as string, app);
      for (let i = 0; i < replicas; i++) {
        queue.push(async () => {
          await client.create(Pods, {
            metadata: {
              generateName: `${app.metadata.name}-`,
              namespace: 'bench',
              ownerReferences: [
                {
                  apiVersion: AppServices.apiVersion,
                  kind: 'AppService',
                  name: app.metadata.name ?? '',
                  uid: app.metadata.uid ?? '',
                  controller: true,
                },
              ],
            },
            spec: { containers: [{ name: 'app', image: 'busybox' }] },
          });
        });
      }
      pump();
    },
  };
}

/**
 * The peers write status with an update (PUT), as kubebuilder's and client-node's examples do; opkit's operator
 * patches it. The shared ServiceAccount gets that one extra verb, so every system runs under the same identity.
 */
async function grantPeerStatusUpdates(admin: Client): Promise<void> {
  const name = 'bench-peers-status-update';
  await admin.create(ClusterRoles, {
    metadata: { name },
    rules: [{ apiGroups: [AppServices.group], resources: ['appservices/status'], verbs: ['update'] }],
  });
  await admin.create(ClusterRoleBindings, {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  });
}
