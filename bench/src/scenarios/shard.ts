/**
 * @module scenarios/shard
 * The AppService operator split over N active replicas (`--sharding`) against one replica, on the converge workload:
 * for each replica count, on a fresh control plane, N operator processes are started (`--sharding` when N > 1; for
 * N = 1 the default single-replica mode, and a sharded 1-replica run too unless asked not to; sharded runs get the
 * operator's sharding RBAC component, as a sharded install does), waited for until every /readyz passes and,
 * sharded, until the 32 fence Leases are held by live replicas and each reports every member; then each replica's RSS
 * is read as its idle figure. `crs` AppServices × `podsPerCR` pods are created at once (32 writers);
 * converge is the time from the first create until a watching client sees every status report its pods ready for its
 * generation (as the converge scenario measures), after which the pods are counted from the apiserver.
 *
 * Per replica: peak RSS (the kernel's VmHWM), CPU seconds from the first create to converged (/proc), RSS and V8 heap
 * 5 s after converged, and cached objects: `opkit_cache_objects` summed over resources from its /metrics — or, for a
 * runtime that does not expose it, counted from the apiserver (every AppService and pod for a single replica; those
 * whose `opkit.dev/shard` label names a bucket whose fence Lease it holds, sharded), which the run then says.
 *
 * A run that fails (a replica exits, a deadline passes) is recorded in `failures` with its error, and the others go on.
 * After each run the figures so far go to `checkpoint`; runs given in `done` (same workload) are not made again.
 *
 * Ratios against the single-replica run (medians over repetitions): cachedRatio = the largest replica's cached
 * objects / the single replica's; memRatio = (largest peak RSS − idle) / (single's peak RSS − idle), with idle the
 * median idle RSS of every replica measured; convergeRatio. Figures, goals and the per-replica model: shard-figures.ts.
 */
import { cpus, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppServices } from '@opkit/appservice';
import type { Client } from '@opkit/runtime/client';
import { Pods } from '@opkit/runtime/kinds';
import { uidShard } from '@opkit/runtime/sharding';
import { auditLogSize, readAuditLog, WRITE_VERBS } from '@opkit/testenv';
import {
  apiserverCpuSince,
  BENCH_NAMESPACE,
  type Bench,
  benchEnv,
  convergedCount,
  createAppServices,
  USER,
  waitUntil,
  watchAppServices,
} from '../harness.ts';
import { cpuSeconds, peakRssBytes, rssBytes } from '../proc.ts';
import {
  installShardingRbac,
  type Replica,
  SHARD_COUNT,
  shardOwners,
  startReplicas,
  stopReplicas,
  waitReady,
} from '../replicas.ts';
import { byLabel, scrape, total } from '../scrape.ts';
import { round } from '../stats.ts';
import {
  type ReplicaFigures,
  type ShardFailure,
  type ShardResult,
  type ShardRun,
  shardFigures,
} from './shard-figures.ts';

export type { ShardResult } from './shard-figures.ts';
export { shardMarkdown } from './shard-figures.ts';

export interface ShardOptions {
  /** Replica counts, each on a fresh control plane. */
  readonly replicaCounts: readonly number[];
  /** Also a sharded run with one replica (when 1 is among the counts). */
  readonly shardedSingle: boolean;
  /** Each sharded run also with the apiserver's shard selectors (`sharded-server`, the gate on). */
  readonly shardSelectors?: boolean;
  readonly crs: number;
  readonly podsPerCR: number;
  readonly workers: number;
  readonly repeat: number;
  readonly log: (line: string) => void;
  /** Runs already made with the same workload (from an interrupted run's figures): not made again. */
  readonly done?: readonly ShardRun[];
  /** Called with the figures so far after each run, so an interrupted benchmark keeps what it measured. */
  readonly checkpoint?: (partial: ShardResult) => Promise<void>;
}

const SHARD_LABEL = 'opkit.dev/shard';
const MiB = 2 ** 20;

export async function shardScenario(o: ShardOptions): Promise<ShardResult> {
  const configs: { replicas: number; mode: ShardRun['mode'] }[] = [];
  for (const n of o.replicaCounts) {
    if (n === 1) configs.push({ replicas: 1, mode: 'single' });
    if (n > 1 || o.shardedSingle) configs.push({ replicas: n, mode: 'sharded' });
    if ((n > 1 || o.shardedSingle) && o.shardSelectors) configs.push({ replicas: n, mode: 'sharded-server' });
  }
  const runs: ShardRun[] = [...(o.done ?? [])];
  const failures: ShardFailure[] = [];
  const machine = `${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}`;
  const figures = () =>
    shardFigures({ crs: o.crs, podsPerCR: o.podsPerCR, workers: o.workers, machine, runs, failures });
  for (let rep = 0; rep < o.repeat; rep++) {
    // rotating order across repetitions, as the benchmark protocol asks
    for (let j = 0; j < configs.length; j++) {
      const c = configs[(rep + j) % configs.length] as (typeof configs)[number];
      if (runs.some((r) => r.replicas === c.replicas && r.mode === c.mode && r.repetition === rep + 1)) continue;
      const run = await shardRun(o, c.replicas, c.mode, rep).catch((err: unknown) => {
        const error = err instanceof Error ? err.message : String(err);
        failures.push({ replicas: c.replicas, mode: c.mode, repetition: rep + 1, error });
        o.log(`shard ${c.mode} ×${c.replicas} (rep ${rep + 1}) failed: ${error}`);
      });
      if (!run) continue;
      runs.push(run);
      await o.checkpoint?.(figures());
      o.log(
        `shard ${c.mode} ×${c.replicas} (rep ${rep + 1}): converged in ${run.convergeSeconds} s; per replica ` +
          run.perReplica.map((r) => `${r.rssMiB} MiB / ${r.cpuSeconds} s CPU / ${r.cachedObjects} cached`).join('; '),
      );
    }
  }
  if (runs.length === 0) throw new Error(`every shard run failed: ${failures.map((f) => f.error).join('; ')}`);
  return figures();
}

async function shardRun(o: ShardOptions, count: number, mode: ShardRun['mode'], rep: number): Promise<ShardRun> {
  const server = mode === 'sharded-server';
  const bench = await benchEnv(o.crs * o.podsPerCR, server ? { featureGates: 'ShardedListAndWatch=true' } : {});
  const ctl = new AbortController();
  let replicas: Replica[] = [];
  const sharded = mode !== 'single';
  try {
    if (sharded) await installShardingRbac(bench.admin);
    const t0 = performance.now();
    replicas = await startReplicas({
      kubeconfig: bench.kubeconfig,
      count,
      workers: o.workers,
      sharding: sharded,
      ...(sharded ? { filter: server ? ('server' as const) : ('labels' as const) } : {}),
      prefix: `shard-${mode}-${count}-${rep}`,
    });
    await waitReady(replicas, 120_000);
    if (sharded) await waitBalanced(bench.admin, replicas, 120_000);
    const readySeconds = round((performance.now() - t0) / 1000, 2);
    await sleep(5_000); // settled: what an idle replica holds
    const idle = await Promise.all(replicas.map((r) => rssBytes(r.proc.pid ?? 0)));
    const w = await workload(bench, o, replicas, ctl.signal);
    await sleep(5_000); // steady: the cache holds every object, the converge's garbage is collectable
    const figures = await replicaFigures(bench.admin, replicas, mode, idle, (i) => w.cpuSeconds[i] ?? 0);
    return {
      replicas: count,
      mode,
      repetition: rep + 1,
      convergeSeconds: w.convergeSeconds,
      createSeconds: w.createSeconds,
      apiserverCpuSeconds: w.apiserverCpuSeconds,
      readySeconds,
      pods: await countPods(bench),
      ...(await requestFigures(bench, w.audit, o.crs, w.convergeSeconds)),
      cachedObjectsSource: figures.some((f) => f.cachedFrom === 'apiserver') ? 'apiserver' : 'metric',
      perReplica: figures.map(({ cachedFrom: _, ...f }) => f),
    };
  } finally {
    ctl.abort();
    await stopReplicas(replicas);
    await bench.stop();
  }
}

/**
 * The converge: `crs` AppServices created at once, until the watching client sees every one converged. Its time from
 * the first create, each replica's and kube-apiserver's CPU over it, and the audit log's span of it.
 */
async function workload(bench: Bench, o: ShardOptions, replicas: readonly Replica[], signal: AbortSignal) {
  const observed = await watchAppServices(bench.admin, signal);
  const from = await auditLogSize(bench.auditLog);
  const cpu0 = await Promise.all(replicas.map((r) => cpuSeconds(r.proc.pid ?? 0)));
  const apiserverCpuNow = await apiserverCpuSince(bench);
  const start = performance.now();
  await createAppServices(bench.admin, o.crs, () => o.podsPerCR);
  const createSeconds = round((performance.now() - start) / 1000, 2);
  const converged = () => {
    const gone = replicas.find((r) => r.proc.exitCode !== null || r.proc.signalCode !== null);
    if (gone) throw new Error(`replica ${gone.name} exited (${gone.proc.exitCode ?? gone.proc.signalCode})`);
    return convergedCount(observed) >= o.crs;
  };
  await waitUntil(`${replicas.length} replicas converging`, converged, 30 * 60_000);
  const convergeSeconds = round((performance.now() - start) / 1000, 2);
  const cpu1 = await Promise.all(replicas.map((r) => cpuSeconds(r.proc.pid ?? 0)));
  const apiserverCpu = await apiserverCpuNow();
  const apiserverCpuSeconds = apiserverCpu === null ? null : round(apiserverCpu, 1);
  const to = await auditLogSize(bench.auditLog);
  const cpuSecondsOf = cpu1.map((c, i) => c - (cpu0[i] ?? 0));
  return { createSeconds, convergeSeconds, cpuSeconds: cpuSecondsOf, apiserverCpuSeconds, audit: { from, to } };
}

/**
 * The operator's requests over the converge (audit log, its ServiceAccount): per AppService, by verb and by verb and
 * resource; Lease writes per second.
 */
async function requestFigures(bench: Bench, span: { from: number; to: number }, crs: number, seconds: number) {
  const busy = (await readAuditLog(bench.auditLog, { ...span, username: USER })).events;
  const byVerb: Record<string, number> = {};
  const byRequest: Record<string, number> = {};
  for (const e of busy) {
    const sub = e.objectRef?.subresource ? `/${e.objectRef.subresource}` : '';
    const request = `${e.verb} ${e.objectRef?.resource ?? '?'}${sub}`;
    byVerb[e.verb] = (byVerb[e.verb] ?? 0) + 1;
    byRequest[request] = (byRequest[request] ?? 0) + 1;
  }
  const perCR = (counts: Record<string, number>) =>
    Object.fromEntries(Object.entries(counts).map(([k, n]) => [k, round(n / crs, 2)]));
  const leaseWrites = busy.filter((e) => e.objectRef?.resource === 'leases' && WRITE_VERBS.has(e.verb)).length;
  return {
    requestsPerCR: round(busy.length / crs, 2),
    requestsPerCRByVerb: perCR(byVerb),
    requestsPerCRByRequest: perCR(byRequest),
    leaseWritesPerSecond: round(leaseWrites / seconds, 2),
  };
}

/**
 * Waits until the shards are split over every replica: the 32 fence Leases held by live replicas, each replica
 * holding one at least (while there are as many buckets as replicas), and — where the replicas expose them — their
 * `opkit_shards_held` summing to 32 and `opkit_shard_members` equal to the replica count.
 */
async function waitBalanced(admin: Client, replicas: readonly Replica[], timeoutMs: number): Promise<void> {
  let last = '';
  const check = async () => {
    const owners = await shardOwners(admin, replicas);
    const metrics = await Promise.all(replicas.map((r) => scrape(r.metricsUrl).catch(() => [])));
    const buckets = metrics.map((m) => total(m, 'opkit_shards_held'));
    const members = metrics.map((m) => total(m, 'opkit_shard_members'));
    last =
      `fence Leases ${JSON.stringify(Object.values(owners.byReplica).map((b) => b.length))} (unheld ` +
      `${owners.unheld.length}), opkit_shards_held ${JSON.stringify(buckets)}, opkit_shard_members ${JSON.stringify(members)}`;
    const everyOneHolds = Object.values(owners.byReplica).every((b) => b.length > 0 || replicas.length > SHARD_COUNT);
    const bucketSum =
      buckets.every((b) => b === undefined) || buckets.reduce<number>((s, b) => s + (b ?? 0), 0) === SHARD_COUNT;
    const membersSeen = members.every((m) => m === undefined || m === replicas.length);
    return owners.unheld.length === 0 && everyOneHolds && bucketSum && membersSeen;
  };
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`shards not split after ${timeoutMs / 1000} s: ${last}`);
    await sleep(500);
  }
}

type Counted = ReplicaFigures & { readonly cachedFrom: 'metric' | 'apiserver' };

/** Each replica's figures once converged and steady (see the module comment for where each comes from). */
async function replicaFigures(
  admin: Client,
  replicas: readonly Replica[],
  mode: ShardRun['mode'],
  idle: readonly number[],
  cpu: (i: number) => number,
): Promise<Counted[]> {
  const owners = mode !== 'single' ? await shardOwners(admin, replicas) : undefined;
  let byApiserver: ((r: Replica) => Promise<number>) | undefined;
  return Promise.all(
    replicas.map(async (r, i): Promise<Counted> => {
      const pid = r.proc.pid ?? 0;
      const samples = await scrape(r.metricsUrl).catch(() => []);
      const metric = total(samples, 'opkit_cache_objects');
      let cachedObjects = metric;
      if (cachedObjects === undefined) {
        byApiserver ??= apiserverCounter(admin, owners?.byReplica, mode === 'sharded-server');
        cachedObjects = await byApiserver(r);
      }
      const heap = total(samples, 'nodejs_heap_size_used_bytes');
      const buckets = total(samples, 'opkit_shards_held');
      const members = total(samples, 'opkit_shard_members');
      return {
        name: r.name,
        rssMiB: round((await peakRssBytes(pid)) / MiB, 1),
        cpuSeconds: round(cpu(i), 2),
        cachedObjects,
        cachedByResource: byLabel(samples, 'opkit_cache_objects', 'resource'),
        idleRssMiB: round((idle[i] ?? 0) / MiB, 1),
        steadyRssMiB: round((await rssBytes(pid)) / MiB, 1),
        heapUsedMiB: heap === undefined ? null : round(heap / MiB, 1),
        buckets: buckets ?? null,
        bucketsByLease: owners ? (owners.byReplica[r.name]?.length ?? 0) : null,
        members: members ?? null,
        cachedFrom: metric === undefined ? 'apiserver' : 'metric',
      };
    }),
  );
}

/**
 * The fallback for a runtime without `opkit_cache_objects`: what a replica should cache, counted from the apiserver —
 * every AppService and pod for a single replica, those in a bucket it holds when sharded (by their label; with the
 * apiserver's shard selectors, an AppService's bucket is its uid's hash and a pod's label is `u<bucket>`).
 */
function apiserverCounter(
  admin: Client,
  held: Record<string, number[]> | undefined,
  server: boolean,
): (r: Replica) => Promise<number> {
  const everything = Promise.all([admin.list(AppServices), admin.list(Pods)]).then(([a, p]) => [
    ...a.items,
    ...p.items,
  ]);
  return async (r) => {
    const objects = await everything;
    if (!held) return objects.length;
    const mine = new Set(held[r.name] ?? []);
    const bucketOf = (obj: (typeof objects)[number]) => {
      if (server && obj.kind === 'AppService') return uidShard(obj.metadata.uid ?? '');
      const label = obj.metadata.labels?.[SHARD_LABEL] ?? '';
      return Number(server ? label.slice(1) : label);
    };
    return objects.filter((obj) => mine.has(bucketOf(obj))).length;
  };
}

/** The pods in the bench namespace, counted by the apiserver (every pod exists once converged). */
async function countPods(bench: Bench): Promise<number> {
  return (await bench.admin.list(Pods, { namespace: BENCH_NAMESPACE })).items.length;
}
