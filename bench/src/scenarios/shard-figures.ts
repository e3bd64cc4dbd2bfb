/**
 * @module scenarios/shard-figures
 * The shard scenario's figures from its runs: medians per (replica count, mode), the ratios against the
 * single-replica run, the goals of the sharding issue, a per-replica cost model, and the Markdown table.
 *
 * - idle, per mode: the median RSS of the mode's replicas measured before their workload (Node's fixed cost, the
 *   mode's own — a sharded replica's includes its Lease informers and per-bucket machinery — and an empty cache).
 *   `idleRssMiB` is the single mode's.
 * - cachedRatio: the largest replica's cached objects at N / the single replica's.
 * - memRatio: (the largest replica's peak RSS at N − its mode's idle) / (the single replica's peak RSS − idle);
 *   memRatioSingleIdle the same with the single mode's idle on both sides (the sharding's fixed cost counted);
 *   steadyMemRatio with RSS 5 s after converged in place of the peak.
 * - convergeRatio, cpuRatio (the busiest replica's CPU), totalCpuRatio (all replicas' CPU): at N / single's.
 * - model: per-replica cost = idle + bytesPerCachedObject × cached, cached = the single replica's / N (plus what a
 *   sharded replica caches beyond its share, measured), CPU = the single replica's / N; both fitted on the
 *   single-replica run, and set beside what was measured at each N.
 */
import { round, summarize } from '../stats.ts';

export interface ReplicaFigures {
  readonly name: string;
  /** Peak RSS over the process's life (VmHWM). */
  readonly rssMiB: number;
  /** CPU from the first create until converged. */
  readonly cpuSeconds: number;
  /** `opkit_cache_objects` summed over resources (or counted from the apiserver: see the run's source). */
  readonly cachedObjects: number;
  readonly cachedByResource: Readonly<Record<string, number>>;
  /** RSS before the workload, ready and settled. */
  readonly idleRssMiB: number;
  /** RSS 5 s after converged. */
  readonly steadyRssMiB: number;
  readonly heapUsedMiB: number | null;
  /** `opkit_shards_held`, `opkit_shard_members` (null when not exposed). */
  readonly buckets: number | null;
  /** The fence Leases it holds, read from the apiserver (null when not sharded). */
  readonly bucketsByLease: number | null;
  readonly members: number | null;
}

export interface ShardRun {
  readonly replicas: number;
  /**
   * `single`: the default mode (no --sharding); `sharded`: every replica with --sharding, shards selected by label
   * (`--sharding-filter=labels`); `sharded-server`: with the apiserver's shard selectors (its `ShardedListAndWatch`
   * gate on, `--sharding-filter=server`).
   */
  readonly mode: 'single' | 'sharded' | 'sharded-server';
  readonly repetition: number;
  /** First create → every AppService's status reports its pods ready, seen by a watching client. */
  readonly convergeSeconds: number;
  readonly createSeconds: number;
  /** kube-apiserver's CPU over the converge (null when not measured): the bound on a small machine. */
  readonly apiserverCpuSeconds?: number | null;
  /** Spawn → every replica ready (and, sharded, the shards split). */
  readonly readySeconds: number;
  /** Pods in the namespace once converged (counted by the apiserver). */
  readonly pods: number;
  readonly requestsPerCR: number;
  readonly requestsPerCRByVerb: Readonly<Record<string, number>>;
  /** By `<verb> <resource>[/<subresource>]`. */
  readonly requestsPerCRByRequest: Readonly<Record<string, number>>;
  readonly leaseWritesPerSecond: number;
  readonly cachedObjectsSource: 'metric' | 'apiserver';
  readonly perReplica: readonly ReplicaFigures[];
}

/** A run that did not finish, and why (e.g. a replica that exited). */
export interface ShardFailure {
  readonly replicas: number;
  readonly mode: ShardRun['mode'];
  readonly repetition: number;
  readonly error: string;
}

export interface ShardSummary {
  readonly replicas: number;
  readonly mode: ShardRun['mode'];
  readonly runs: number;
  readonly convergeSeconds: { readonly median: number; readonly min: number; readonly max: number };
  /** This mode's idle replica RSS (median). */
  readonly idleRssMiB: number;
  readonly maxRssMiB: number;
  readonly maxSteadyRssMiB: number;
  readonly maxCachedObjects: number;
  readonly maxCpuSeconds: number;
  readonly totalCpuSeconds: number;
  /** kube-apiserver's CPU over the converge, median (null when not measured). */
  readonly apiserverCpuSeconds: number | null;
  readonly cachedRatio: number | null;
  readonly memRatio: number | null;
  readonly memRatioSingleIdle: number | null;
  readonly steadyMemRatio: number | null;
  readonly convergeRatio: number | null;
  readonly cpuRatio: number | null;
  readonly totalCpuRatio: number | null;
}

export interface ShardResult {
  readonly machine: string;
  readonly crs: number;
  readonly podsPerCR: number;
  readonly pods: number;
  readonly workers: number;
  /** An idle replica's RSS, single mode (median of those measured), and its spread. */
  readonly idleRssMiB: number;
  readonly idleRssSpreadMiB: readonly [number, number];
  /** An idle sharded replica's RSS (median), when sharded runs were made. */
  readonly idleRssMiBSharded: number | null;
  readonly runs: readonly ShardRun[];
  readonly failures: readonly ShardFailure[];
  readonly summary: readonly ShardSummary[];
  readonly goals: readonly Goal[];
  readonly model: Model | null;
}

export interface Goal {
  readonly figure: string;
  readonly goal: number;
  readonly measured: number | null;
  readonly met: boolean | null;
}

interface Model {
  readonly idleRssMiB: number;
  /** An idle sharded replica's RSS: the fixed cost a sharded replica adds is this − idleRssMiB. */
  readonly idleRssMiBSharded: number;
  readonly bytesPerCachedObject: number;
  readonly cpuMillisPerCachedObject: number;
  readonly at: readonly {
    readonly replicas: number;
    readonly predicted: { readonly cachedObjects: number; readonly rssMiB: number; readonly cpuSeconds: number };
    readonly measured: { readonly cachedObjects: number; readonly rssMiB: number; readonly cpuSeconds: number } | null;
  }[];
}

const median = (values: readonly number[]) => summarize(values).median;
const max = (values: readonly number[]) => Math.max(...values);
const ratio = (a: number, b: number | undefined, digits = 3) => (b ? round(a / b, digits) : null);

export function shardFigures(r: {
  crs: number;
  podsPerCR: number;
  workers: number;
  machine: string;
  runs: readonly ShardRun[];
  failures: readonly ShardFailure[];
}): ShardResult {
  const idlesOf = (mode: ShardRun['mode']) =>
    r.runs.filter((run) => run.mode === mode).flatMap((run) => run.perReplica.map((p) => p.idleRssMiB));
  const idleOf = (mode: ShardRun['mode']) => (idlesOf(mode).length ? round(median(idlesOf(mode)), 1) : null);
  const idles = idlesOf('single').length ? idlesOf('single') : idlesOf('sharded');
  const idle = idleOf('single') ?? idleOf('sharded') ?? 0;
  const keys = [...new Set(r.runs.map((run) => `${run.mode}:${run.replicas}`))];
  const raw = keys.map((k) =>
    summarizeRuns(
      r.runs.filter((run) => `${run.mode}:${run.replicas}` === k),
      (mode) => idleOf(mode) ?? idle,
    ),
  );
  const single = raw.find((s) => s.mode === 'single');
  const summary = raw
    .map((s) => withRatios(s, single))
    .sort((a, b) => a.replicas - b.replicas || a.mode.localeCompare(b.mode));
  return {
    machine: r.machine,
    crs: r.crs,
    podsPerCR: r.podsPerCR,
    pods: r.crs * r.podsPerCR,
    workers: r.workers,
    idleRssMiB: idle,
    idleRssSpreadMiB: idles.length ? [Math.min(...idles), Math.max(...idles)] : [0, 0],
    idleRssMiBSharded: idleOf('sharded'),
    runs: r.runs,
    failures: r.failures,
    summary,
    goals: goals(summary.find((s) => s.mode === 'sharded' && s.replicas === 3)),
    model: single ? model(single, summary, idleOf('sharded') ?? idle) : null,
  };
}

type Raw = Omit<
  ShardSummary,
  'cachedRatio' | 'memRatio' | 'memRatioSingleIdle' | 'steadyMemRatio' | 'convergeRatio' | 'cpuRatio' | 'totalCpuRatio'
>;

function summarizeRuns(runs: readonly ShardRun[], idleOf: (mode: ShardRun['mode']) => number): Raw {
  const first = runs[0] as ShardRun;
  const per = (f: (p: ReplicaFigures) => number, agg: (v: number[]) => number) =>
    median(runs.map((run) => agg(run.perReplica.map(f))));
  const converge = summarize(runs.map((run) => run.convergeSeconds));
  const apiserverCpu = runs.flatMap((run) =>
    typeof run.apiserverCpuSeconds === 'number' ? [run.apiserverCpuSeconds] : [],
  );
  return {
    replicas: first.replicas,
    mode: first.mode,
    runs: runs.length,
    convergeSeconds: { median: round(converge.median, 2), min: converge.min, max: converge.max },
    idleRssMiB: idleOf(first.mode),
    maxRssMiB: round(
      per((p) => p.rssMiB, max),
      1,
    ),
    maxSteadyRssMiB: round(
      per((p) => p.steadyRssMiB, max),
      1,
    ),
    maxCachedObjects: per((p) => p.cachedObjects, max),
    maxCpuSeconds: round(
      per((p) => p.cpuSeconds, max),
      2,
    ),
    apiserverCpuSeconds: apiserverCpu.length ? round(median(apiserverCpu), 1) : null,
    totalCpuSeconds: round(
      per(
        (p) => p.cpuSeconds,
        (v) => v.reduce((s, x) => s + x, 0),
      ),
      2,
    ),
  };
}

function withRatios(s: Raw, single: Raw | undefined): ShardSummary {
  const idle = single?.idleRssMiB ?? 0;
  return {
    ...s,
    cachedRatio: single ? ratio(s.maxCachedObjects, single.maxCachedObjects) : null,
    memRatio: single ? ratio(s.maxRssMiB - s.idleRssMiB, single.maxRssMiB - idle) : null,
    memRatioSingleIdle: single ? ratio(s.maxRssMiB - idle, single.maxRssMiB - idle) : null,
    steadyMemRatio: single ? ratio(s.maxSteadyRssMiB - s.idleRssMiB, single.maxSteadyRssMiB - idle) : null,
    convergeRatio: single ? ratio(s.convergeSeconds.median, single.convergeSeconds.median) : null,
    cpuRatio: single ? ratio(s.maxCpuSeconds, single.maxCpuSeconds) : null,
    totalCpuRatio: single ? ratio(s.totalCpuSeconds, single.maxCpuSeconds) : null,
  };
}

function goals(three: ShardSummary | undefined): Goal[] {
  const goal = (figure: string, bound: number, measured: number | null | undefined): Goal => ({
    figure,
    goal: bound,
    measured: measured ?? null,
    met: measured === null || measured === undefined ? null : measured <= bound,
  });
  return [
    goal('cached objects of a replica of 3 / a single replica’s', 0.4, three?.cachedRatio),
    goal(
      '(peak RSS − idle) of a replica of 3 / a single replica’s (each against its own mode’s idle)',
      0.45,
      three?.memRatio,
    ),
    goal('converge time with 3 replicas / with 1', 1.0, three?.convergeRatio),
  ];
}

function model(single: Raw, summary: readonly ShardSummary[], idleSharded: number): Model {
  const idle = single.idleRssMiB;
  const bytesPerObject = ((single.maxRssMiB - idle) * 2 ** 20) / single.maxCachedObjects;
  const cpuPerObject = single.maxCpuSeconds / single.maxCachedObjects;
  const counts = [...new Set([...summary.map((s) => s.replicas), 2, 3, 5, 10])].sort((a, b) => a - b);
  return {
    idleRssMiB: idle,
    idleRssMiBSharded: idleSharded,
    bytesPerCachedObject: Math.round(bytesPerObject),
    cpuMillisPerCachedObject: round(cpuPerObject * 1000, 3),
    at: counts.map((n) => {
      const cached = Math.ceil(single.maxCachedObjects / n);
      const measured = summary.find((s) => s.replicas === n && (n === 1 ? s.mode === 'single' : s.mode === 'sharded'));
      return {
        replicas: n,
        predicted: {
          cachedObjects: cached,
          rssMiB: round((n === 1 ? idle : idleSharded) + (bytesPerObject * cached) / 2 ** 20, 1),
          cpuSeconds: round(cpuPerObject * cached, 2),
        },
        measured: measured
          ? { cachedObjects: measured.maxCachedObjects, rssMiB: measured.maxRssMiB, cpuSeconds: measured.maxCpuSeconds }
          : null,
      };
    }),
  };
}

export function shardMarkdown(r: ShardResult): string {
  const list = (xs: readonly number[]) => xs.join(', ');
  const perReplica = (s: ShardSummary, f: (p: ReplicaFigures) => number) => {
    // the figures of the run whose converge time is the median's (or the nearest)
    const runs = r.runs.filter((x) => x.replicas === s.replicas && x.mode === s.mode);
    const run = runs.reduce((a, b) =>
      Math.abs(b.convergeSeconds - s.convergeSeconds.median) < Math.abs(a.convergeSeconds - s.convergeSeconds.median)
        ? b
        : a,
    );
    return list(run.perReplica.map(f));
  };
  const fmt = (x: number | null) => (x === null ? '—' : `${x}×`);
  const rows = r.summary.map(
    (s) =>
      `| ${s.replicas} | ${s.mode} | ${s.convergeSeconds.median} (${s.convergeSeconds.min}–${s.convergeSeconds.max}) | ` +
      `${s.idleRssMiB} | ${perReplica(s, (p) => p.rssMiB)} | ${perReplica(s, (p) => p.steadyRssMiB)} | ` +
      `${perReplica(s, (p) => p.cpuSeconds)} | ${perReplica(s, (p) => p.cachedObjects)} | ${fmt(s.cachedRatio)} | ` +
      `${fmt(s.memRatio)} (${fmt(s.memRatioSingleIdle)}) | ${fmt(s.convergeRatio)} |`,
  );
  const runs = Math.max(...r.summary.map((s) => s.runs));
  return [
    `Sharding: ${r.crs} AppServices × ${r.podsPerCR} pods (${r.pods} pods), ${r.workers} workers per replica, ` +
      `median of ${runs} run(s) per row; idle replica RSS ${r.idleRssMiB} MiB (${r.idleRssSpreadMiB.join('–')}), ` +
      `sharded ${r.idleRssMiBSharded ?? '—'} MiB; ${r.machine}. Per-replica figures: the run nearest the median.`,
    '',
    '| replicas | mode | converge (s) | idle RSS (MiB) | peak RSS per replica (MiB) | RSS after converge (MiB) | CPU per replica (s) | cached objects per replica | cached / single | (peak − idle) / single’s (single’s idle) | converge / single |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    ...r.goals.map(
      (g) =>
        `- ${g.figure}: ${g.measured ?? '—'} (goal ≤ ${g.goal}): ${g.met === null ? 'not measured' : g.met ? 'met' : 'not met'}`,
    ),
    ...r.failures.map((f) => `- failed: ${f.mode} ×${f.replicas} (rep ${f.repetition}): ${f.error}`),
    ...(r.runs.some((x) => x.cachedObjectsSource === 'apiserver')
      ? ['- cached objects counted from the apiserver by label (the replicas expose no opkit_cache_objects)']
      : []),
  ].join('\n');
}
