/**
 * @module harness
 * What every comparison scenario shares: a fresh control plane with the apiserver audit log, the AppService API and
 * the operator's RBAC installed, the `bench` namespace and the operator ServiceAccount's kubeconfig; a watching client
 * that observes AppServices from outside the system under test; AppServices created at a fixed concurrency; the
 * system's process started, sampled (/proc RSS) and stopped; on demand (BENCH_APISERVER_PROF), a CPU profile of
 * kube-apiserver.
 */
import { type ChildProcess, execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AppService, AppServices, installApiAndRbac, NAME, NAMESPACE } from '@opkit/appservice';
import { Cache, type Informer } from '@opkit/runtime/cache';
import { Client, loadConfig } from '@opkit/runtime/client';
import { ClusterRoleBindings, ClusterRoles, Namespaces } from '@opkit/runtime/kinds';
import { type Environment, start } from '@opkit/testenv';
import { cpuSeconds, rssBytes } from './proc.ts';

/** The audit-log user every system runs as. */
export const USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;
export const BENCH_NAMESPACE = 'bench';

export interface Bench {
  readonly env: Environment;
  readonly admin: Client;
  /** The operator ServiceAccount's kubeconfig. */
  readonly kubeconfig: string;
  readonly auditLog: string;
  stop(): Promise<void>;
}

/** A fresh control plane sized for `pods` pods on 3 kwok nodes, with the API, RBAC and namespace in place. */
export async function benchEnv(pods: number, o: { readonly featureGates?: string } = {}): Promise<Bench> {
  const flags = [
    // the apiserver's /debug/pprof, for apiserverProfile
    ...(process.env.BENCH_APISERVER_PROF ? ['--profiling=true'] : []),
    ...(o.featureGates ? [`--feature-gates=${o.featureGates}`] : []),
  ];
  const env = await start({
    nodes: 3,
    podsPerNode: Math.ceil(pods / 3) + 100,
    auditLog: true,
    log: () => {},
    ...(flags.length ? { apiserverArgs: flags } : {}),
  });
  try {
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'bench-writer' });
    await installApiAndRbac(admin);
    await grantPeerStatusUpdates(admin);
    await admin.create(Namespaces, { metadata: { name: BENCH_NAMESPACE } });
    const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    return {
      env,
      admin,
      kubeconfig: sa.path,
      auditLog: env.auditLogPath as string,
      async stop() {
        admin.close();
        await env.stop();
      },
    };
  } catch (err) {
    await env.stop();
    throw err;
  }
}

/**
 * The peers write status with an update (PUT), as kubebuilder's and client-node's examples do, and their Events to
 * core/v1 (controller-runtime's `GetEventRecorderFor`, client-node's and kfc's Event kinds); opkit's operator has its
 * own rules for its status writes and events.k8s.io/v1 Events. The shared ServiceAccount gets those extra rules, so
 * every system runs under the same identity and every system's Events are really written (a refused Event would cost
 * the apiserver less).
 */
async function grantPeerStatusUpdates(admin: Client): Promise<void> {
  const name = 'bench-peers-status-update';
  await admin.create(ClusterRoles, {
    metadata: { name },
    rules: [
      { apiGroups: [AppServices.group], resources: ['appservices/status'], verbs: ['update'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ],
  });
  await admin.create(ClusterRoleBindings, {
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
    subjects: [{ kind: 'ServiceAccount', name: NAME, namespace: NAMESPACE }],
  });
}

/** A client watching the bench namespace's AppServices, as a user would: the system's effects seen from outside. */
export async function watchAppServices(admin: Client, signal: AbortSignal): Promise<Informer<AppService>> {
  const cache = new Cache({ client: admin, namespace: BENCH_NAMESPACE });
  cache.start(signal);
  const inf = cache.informer(AppServices);
  await inf.waitForSync();
  return inf;
}

/**
 * Resolves with `performance.now()` at the moment the watching client sees AppService `name` satisfy `ok` (at once
 * when it already does).
 */
export function observedAt(inf: Informer<AppService>, name: string, ok: (app: AppService) => boolean): Promise<number> {
  return new Promise((resolve) => {
    let done = false;
    let off: (() => void) | undefined;
    const seen = (app: AppService) => {
      if (done || app.metadata.name !== name || !ok(app)) return;
      done = true;
      off?.();
      resolve(performance.now());
    };
    // registering replays the store (an `add` per object), so an AppService already there is seen at once
    off = inf.addEventHandler({ add: seen, update: (_old, app) => seen(app) });
    if (done) off();
  });
}

/**
 * Time to caches synced, seen from outside: right after `proc` was spawned (at `spawnedAt`, a `performance.now()`),
 * a probe AppService (replicas 0) is created; a system reconciles only once its caches are synced, so the moment its
 * status for the probe is observed bounds that time. Seconds from spawn.
 */
export async function probeSynced(
  admin: Client,
  observed: Informer<AppService>,
  probe: string,
  proc: ChildProcess,
  spawnedAt: number,
  timeoutMs: number,
): Promise<number> {
  await admin.create(AppServices, {
    metadata: { name: probe, namespace: BENCH_NAMESPACE },
    spec: { replicas: 0, image: 'busybox' },
  } as AppService);
  const seen = observedAt(observed, probe, (a) => reports(a, 0, false));
  return ((await within(`${probe}: the system reconciling`, seen, timeoutMs, proc)) - spawnedAt) / 1000;
}

/** Waits for `promise`, failing when the process exits or `timeoutMs` passes. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs: number, proc?: ChildProcess): Promise<T> {
  let settled = false;
  const guard = waitUntil(what, () => settled, timeoutMs, proc);
  try {
    return await Promise.race([promise, guard.then(() => promise)]);
  } finally {
    settled = true;
    await guard.catch(() => {});
  }
}

/** The replicas of `app-i` when `pods` pods are spread over `crs` AppServices as evenly as they go. */
export function spreadPods(crs: number, pods: number): (i: number) => number {
  const base = Math.floor(pods / crs);
  return (i) => base + (i < pods - base * crs ? 1 : 0);
}

/** How many AppServices the watching client sees converged: every pod of their spec counted and ready. */
export function convergedCount(observed: Informer<AppService>): number {
  return observed.store.list().filter((a) => reports(a, a.spec?.replicas ?? 1, true)).length;
}

/** True when the AppService's status reports `replicas` pods for its current generation (ready ones when asked). */
export function reports(app: AppService, replicas: number, ready: boolean): boolean {
  const s = app.status;
  return (
    s?.observedGeneration === app.metadata.generation &&
    s?.replicas === replicas &&
    (!ready || s.readyReplicas === replicas)
  );
}

/** Creates `count` AppServices (`app-0`…) with 32 in flight; `replicasOf(i)` pods each. */
export async function createAppServices(
  admin: Client,
  count: number,
  replicasOf: (i: number) => number,
  onCreated?: (app: AppService, at: number) => void,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const at = performance.now();
        const created = await admin.create(AppServices, {
          metadata: { name: `app-${i}`, namespace: BENCH_NAMESPACE },
          spec: { replicas: replicasOf(i), image: 'busybox' },
        } as AppService);
        onCreated?.(created, at);
      }
    }),
  );
}

/**
 * Starts reading kube-apiserver's CPU (/proc): resolves with a function giving its CPU seconds since then (`null`
 * when the control plane does not report its pid).
 */
export async function apiserverCpuSince(bench: Bench): Promise<() => Promise<number | null>> {
  const pid = bench.env.pids['kube-apiserver'];
  if (pid === undefined) return async () => null;
  const from = await cpuSeconds(pid);
  return async () => (await cpuSeconds(pid)) - from;
}

/** Polls `done` every 250 ms; fails when the process exits or `timeoutMs` passes. */
export async function waitUntil(
  what: string,
  done: () => boolean,
  timeoutMs: number,
  proc?: ChildProcess,
): Promise<void> {
  const t0 = performance.now();
  while (!done()) {
    if (proc && (proc.exitCode !== null || proc.signalCode !== null))
      throw new Error(`${what}: the system exited (${proc.exitCode ?? proc.signalCode})`);
    if (performance.now() - t0 > timeoutMs) throw new Error(`${what}: not done after ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

/** Samples a process's RSS every 200 ms: the peak and the last value. */
export function sampleRss(pid: number | undefined): { peak(): number; last(): number; stop(): void } {
  let peak = 0;
  let last = 0;
  let reading = false;
  const timer = setInterval(async () => {
    if (!pid || reading) return;
    reading = true;
    const now = await rssBytes(pid);
    reading = false;
    if (now === 0) return; // the process has exited: keep the last reading
    last = now;
    peak = Math.max(peak, last);
  }, 200);
  timer.unref();
  return { peak: () => peak, last: () => last, stop: () => clearInterval(timer) };
}

/** SIGTERM, then waits for the exit. */
export async function stopProcess(proc: ChildProcess | undefined): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  await exited;
}

/** The q-quantile of ascending `sorted` values (nearest rank). */
export function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * q) - 1))] ?? 0;
}

let profiled = 0;

/**
 * Diagnosis, asked for by environment: with BENCH_APISERVER_PROF=DIR, a CPU profile of kube-apiserver over the next
 * `seconds` (its /debug/pprof endpoint, read as the admin) is written to DIR/apiserver-<label>-<n>.pprof, for
 * `go tool pprof`. Resolves when it is written; never fails the run (a failed profile is logged).
 */
export async function apiserverProfile(
  bench: Bench,
  label: string,
  seconds: number,
  log: (line: string) => void,
): Promise<void> {
  const dir = process.env.BENCH_APISERVER_PROF;
  if (!dir) return;
  const file = join(dir, `apiserver-${label}-${++profiled}.pprof`);
  const path = `/debug/pprof/profile?seconds=${seconds}`;
  const args = ['--kubeconfig', bench.env.kubeconfigPath, 'get', '--raw', path];
  const out = await new Promise<Buffer | undefined>((resolve) =>
    execFile('kubectl', args, { encoding: 'buffer', maxBuffer: 64 * 2 ** 20 }, (err, stdout) => {
      if (err) log(`apiserver profile ${file}: ${err.message}`);
      resolve(err ? undefined : stdout);
    }),
  );
  if (out) await writeFile(file, out);
}
