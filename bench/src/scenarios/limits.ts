/**
 * @module scenarios/limits
 * `npm run bench -- limits`: the operator inside kubebuilder's default resources. Each system (opkit as its Deployment
 * runs it, and the Go controller-runtime peer) runs alone in a memory cgroup with the Deployment's limit (`limitMiB`,
 * default 128, no swap: what the kubelet gives a container with `limits.memory: 128Mi`; the process starts in it) on
 * a fresh control plane,
 * converges `crs` AppServices × `replicas` pods from zero, then rests `restSeconds`. Figures per run: the converge
 * time (or how it ended when the kernel killed the process), peak RSS (VmHWM), RSS at rest, the cgroup's peak charge,
 * how often the charge hit the limit, and OOM kills. Repetitions rotate the order of the systems.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { memoryCgroup } from '../cgroup.ts';
import { benchEnv, convergedCount, createAppServices, stopProcess, waitUntil, watchAppServices } from '../harness.ts';
import { goPeerBinary, startPeer } from '../peers.ts';
import { peakRssBytes, rssBytes } from '../proc.ts';
import { round, summarize } from '../stats.ts';

export type LimitsSystem = 'opkit' | 'go';
const SYSTEMS: readonly LimitsSystem[] = ['opkit', 'go'];

export interface LimitsOptions {
  readonly crs: number;
  readonly replicas: number;
  readonly limitMiB: number;
  readonly restSeconds: number;
  readonly repeat: number;
  readonly workers: number;
  readonly log: (line: string) => void;
}

/** One system's run in the cgroup. */
export interface LimitsRun {
  readonly system: LimitsSystem;
  /** Create → every AppService converged (s); null when the system did not get there. */
  readonly convergeSeconds: number | null;
  /** How the run ended when it did not converge (the exit code or signal). */
  readonly ended: string | null;
  readonly peakRssMiB: number;
  /** RSS after `restSeconds` at rest (null when the process was gone). */
  readonly restRssMiB: number | null;
  readonly cgroupPeakMiB: number;
  readonly limitHits: number;
  readonly oomKills: number;
}

export interface LimitsResult {
  readonly crs: number;
  readonly replicas: number;
  readonly limitMiB: number;
  readonly restSeconds: number;
  readonly runs: LimitsRun[];
  /** Per system: medians over its runs, and the total of OOM kills. */
  readonly summary: Record<
    LimitsSystem,
    { convergeSeconds: number | null; peakRssMiB: number; restRssMiB: number | null; oomKills: number }
  >;
}

const MiB = 2 ** 20;

export async function limitsScenario(o: LimitsOptions): Promise<LimitsResult> {
  const goBinary = await goPeerBinary(o.log);
  const runs: LimitsRun[] = [];
  for (let r = 0; r < o.repeat; r++) {
    for (const system of SYSTEMS.map((_, i) => SYSTEMS[(i + r) % SYSTEMS.length] as LimitsSystem)) {
      const run = await once(system, o, goBinary, r);
      o.log(
        `limits ${system}: ${run.convergeSeconds === null ? `ended (${run.ended})` : `converged in ${run.convergeSeconds} s`}, peak RSS ${run.peakRssMiB} MiB, at rest ${run.restRssMiB ?? '-'} MiB, cgroup peak ${run.cgroupPeakMiB} MiB, limit hits ${run.limitHits}, OOM kills ${run.oomKills}`,
      );
      runs.push(run);
    }
  }
  const of = (s: LimitsSystem) => runs.filter((x) => x.system === s);
  const median = (xs: readonly number[]) => (xs.length === 0 ? null : round(summarize(xs).median, 1));
  const summary = Object.fromEntries(
    SYSTEMS.map((s) => [
      s,
      {
        convergeSeconds: median(of(s).flatMap((x) => (x.convergeSeconds === null ? [] : [x.convergeSeconds]))),
        peakRssMiB: median(of(s).map((x) => x.peakRssMiB)) ?? 0,
        restRssMiB: median(of(s).flatMap((x) => (x.restRssMiB === null ? [] : [x.restRssMiB]))),
        oomKills: of(s).reduce((n, x) => n + x.oomKills, 0),
      },
    ]),
  ) as LimitsResult['summary'];
  return { crs: o.crs, replicas: o.replicas, limitMiB: o.limitMiB, restSeconds: o.restSeconds, runs, summary };
}

async function once(system: LimitsSystem, o: LimitsOptions, goBinary: string, r: number): Promise<LimitsRun> {
  const cg = await memoryCgroup(`opkit-bench-limits-${process.pid}-${system}-${r}`, o.limitMiB * MiB);
  const bench = await benchEnv(o.crs * o.replicas).catch(async (err: unknown) => {
    await cg.remove();
    throw err;
  });
  const ctl = new AbortController();
  let proc: ChildProcess | undefined;
  try {
    proc = await startPeer(system, bench.kubeconfig, o.workers, goBinary, { cgroupProcs: cg.procs });
    const pid = proc.pid ?? 0;
    const observed = await watchAppServices(bench.admin, ctl.signal);
    await sleep(2_000);
    const t0 = performance.now();
    await createAppServices(bench.admin, o.crs, () => o.replicas);
    let convergeSeconds: number | null = null;
    let ended: string | null = null;
    try {
      await waitUntil(`${system} converging`, () => convergedCount(observed) >= o.crs, 20 * 60_000, proc);
      convergeSeconds = round((performance.now() - t0) / 1000, 2);
    } catch (err) {
      ended = err instanceof Error ? err.message : String(err);
    }
    const peak = await peakRssBytes(pid); // 0 once the process is gone (killed): the cgroup's peak stands in
    let rest: number | null = null;
    if (convergeSeconds !== null) {
      await sleep(o.restSeconds * 1000);
      rest = await rssBytes(pid);
    }
    const mem = await cg.read();
    return {
      system,
      convergeSeconds,
      ended,
      peakRssMiB: round((peak > 0 ? peak : mem.peakBytes) / MiB, 1),
      restRssMiB: rest === null || rest === 0 ? null : round(rest / MiB, 1),
      cgroupPeakMiB: round(mem.peakBytes / MiB, 1),
      limitHits: mem.limitHits,
      oomKills: mem.oomKills,
    };
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await cg.remove();
    await bench.stop();
  }
}

export function limitsMarkdown(r: LimitsResult): string {
  const label: Record<LimitsSystem, string> = { opkit: 'opkit', go: 'Go controller-runtime' };
  const cell = (v: number | null) => (v === null ? '—' : String(v));
  return [
    `${r.crs} AppServices × ${r.replicas} pods converged from zero in a memory cgroup limited to ${r.limitMiB} MiB (no swap), then ${r.restSeconds} s at rest; each system alone on a fresh control plane, ${r.runs.length / SYSTEMS.length} runs each in rotating order.`,
    '',
    '| system | converge (s), median | peak RSS (MiB) | RSS at rest (MiB) | OOM kills (all runs) | runs: cgroup peak (MiB), limit hits |',
    '| --- | --- | --- | --- | --- | --- |',
    ...SYSTEMS.map((s) => {
      const x = r.summary[s];
      const runs = r.runs
        .filter((y) => y.system === s)
        .map((y) => `${y.cgroupPeakMiB}, ${y.limitHits}`)
        .join('; ');
      return `| ${label[s]} | ${cell(x.convergeSeconds)} | ${x.peakRssMiB} | ${cell(x.restRssMiB)} | ${x.oomKills} | ${runs} |`;
    }),
  ].join('\n');
}
