/**
 * @module scenarios/compare
 * opkit side by side with its peers (Go controller-runtime, @kubernetes/client-node) and, where the job has a
 * minimum, the floor — each system alone on a fresh control plane (or, for `scale`, one after the other on the same
 * objects), in rotating order; medians, spreads and ratios. Scenarios: converge, churn, idle, restart, scale (idle and
 * restart share one run per system: the 5-minute idle window comes before the restarts). Writes one Markdown section
 * and chart per scenario into docs/benchmarks.md when asked, leaving the other scenarios' sections as they were.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { goPeerBinary, PEERS, type PeerName } from '../peers.ts';
import { round, type Summary, summarize } from '../stats.ts';
import { barChart, lineChart } from '../svg.ts';
import { type ChurnRate, type ChurnResult, churnScenario, SUSTAINED_P99_SECONDS } from './churn.ts';
import { type ConvergeResult, convergeScenario, type SystemName } from './converge.ts';
import { type ScaleRun, scaleFigures, scaleScenario } from './scale.ts';
import { type SteadyResult, steadyScenario } from './steady.ts';

export const SCENARIOS = ['converge', 'churn', 'idle', 'restart', 'scale'] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export const SYSTEMS: readonly SystemName[] = ['opkit', 'go', 'kfc', 'clientNode', 'floor'];
const LABEL: Record<SystemName, string> = {
  opkit: 'opkit',
  go: 'Go controller-runtime',
  kfc: 'kubernetes-fluent-client',
  clientNode: 'client-node',
  floor: 'floor',
};

export interface CompareOptions {
  readonly scenarios: readonly ScenarioName[];
  /** The systems to run (default all); the others' figures are null. */
  readonly systems?: readonly SystemName[];
  readonly repeat: number;
  readonly workers: number;
  readonly converge: { readonly crs: number; readonly replicas: number; readonly idleSeconds: number };
  readonly churn: { readonly crs: number; readonly rates: readonly number[]; readonly seconds: number };
  readonly steady: {
    readonly crs: number;
    readonly pods: number;
    readonly idleSeconds: number;
    readonly restarts: number;
  };
  readonly scale: { readonly sizes: readonly number[] };
  readonly log: (line: string) => void;
}

/** One scenario's entry: the figures of each system (null where the system has no part or was not run) and the ratios. */
export interface ScenarioFigures<F> {
  readonly name: ScenarioName;
  readonly parameters: Record<string, unknown>;
  readonly repetitions: number;
  readonly opkit: F | null;
  readonly go: F | null;
  readonly kfc: F | null;
  readonly clientNode: F | null;
  readonly floor: F | null;
  readonly ratios: { readonly opkitOverGo: number | null; readonly opkitOverFloor: number | null } & Record<
    string,
    number | null
  >;
}

export interface CompareResult {
  readonly machine: string;
  readonly scenarios: ScenarioFigures<unknown>[];
}

const med = <R>(rs: readonly R[], f: (r: R) => number, digits = 2) => round(summarize(rs.map(f)).median, digits);
const ratio = (a: number | null | undefined, b: number | null | undefined) =>
  a === null || a === undefined || !b ? null : round(a / b, 2);

/** Runs `job` for every system `repeat` times, rotating the order each round. */
async function rotate<S extends SystemName, R>(
  systems: readonly S[],
  repeat: number,
  job: (system: S) => Promise<R>,
): Promise<Map<S, R[]>> {
  const runs = new Map<S, R[]>(systems.map((s) => [s, []]));
  for (let i = 0; i < repeat; i++)
    for (let j = 0; j < systems.length; j++) {
      const system = systems[(i + j) % systems.length] as S;
      runs.get(system)?.push(await job(system));
    }
  return runs;
}

/** The systems to run among `among` (all of them unless `o.systems` narrows them). */
const chosen = <S extends SystemName>(o: CompareOptions, among: readonly S[]): S[] =>
  among.filter((s) => !o.systems || o.systems.includes(s));

/** Each system's figures (null for the systems not run). */
function perSystem<F>(
  run: readonly SystemName[],
  figures: (s: SystemName) => F,
  among: readonly SystemName[] = SYSTEMS,
): Record<SystemName, F | null> {
  const out = { opkit: null, go: null, kfc: null, clientNode: null, floor: null } as Record<SystemName, F | null>;
  for (const s of among) if (run.includes(s)) out[s] = figures(s);
  return out;
}

export async function compareScenario(o: CompareOptions, machine: string): Promise<CompareResult> {
  const goBinary = await goPeerBinary(o.log);
  const scenarios: ScenarioFigures<unknown>[] = [];
  const want = new Set(o.scenarios);
  if (want.has('converge')) scenarios.push(await converge(o, goBinary));
  if (want.has('churn')) scenarios.push(await churn(o, goBinary));
  if (want.has('idle') || want.has('restart')) {
    const [idle, restart] = await steady(o, goBinary);
    if (want.has('idle')) scenarios.push(idle);
    if (want.has('restart')) scenarios.push(restart);
  }
  if (want.has('scale')) scenarios.push(await scale(o, goBinary));
  return { machine, scenarios };
}

export interface ConvergeFigures {
  seconds: number;
  latencyP50Seconds: number;
  latencyP99Seconds: number;
  requestsPerCR: number;
  requestsPerCRByVerb: Record<string, number>;
  peakRssMiB: number | null;
  cpuSeconds: number | null;
  /** kube-apiserver's CPU per converged AppService (ms; median): what the system costs the apiserver. */
  apiserverCpuMsPerCR: number | null;
  idleWrites: number;
  spread: { seconds: Summary; peakRssMiB: Summary | null; apiserverCpuMsPerCR: Summary | null };
  runs: ConvergeResult[];
}

async function converge(o: CompareOptions, goBinary: string): Promise<ScenarioFigures<ConvergeFigures>> {
  const systems = chosen(o, SYSTEMS);
  const runs = await rotate(systems, o.repeat, async (system) => {
    const r = await convergeScenario({ ...o.converge, workers: o.workers, system, goBinary, log: o.log });
    o.log(
      `converge ${system}: ${r.seconds} s, ${r.requestsPerCR} req/CR, RSS ${r.peakRssMiB ?? '-'} MiB, CPU ${r.cpuSeconds ?? '-'} s, idle writes ${r.idleWrites}`,
    );
    return r;
  });
  const f = perSystem(systems, (system): ConvergeFigures => {
    const rs = runs.get(system) ?? [];
    const rss = rs.every((r) => r.peakRssMiB !== null) ? summarize(rs.map((r) => r.peakRssMiB as number)) : null;
    const apiserver = rs.every((r) => typeof r.apiserverCpuMsPerCR === 'number')
      ? summarize(rs.map((r) => r.apiserverCpuMsPerCR as number))
      : null;
    const byVerb: Record<string, number> = {};
    for (const verb of new Set(rs.flatMap((r) => Object.keys(r.requestsPerCRByVerb))))
      byVerb[verb] = med(rs, (r) => r.requestsPerCRByVerb[verb] ?? 0);
    return {
      seconds: med(rs, (r) => r.seconds),
      latencyP50Seconds: med(rs, (r) => r.latencyP50Seconds),
      latencyP99Seconds: med(rs, (r) => r.latencyP99Seconds),
      requestsPerCR: med(rs, (r) => r.requestsPerCR),
      requestsPerCRByVerb: byVerb,
      peakRssMiB: rss ? round(rss.median, 1) : null,
      cpuSeconds: rs.every((r) => r.cpuSeconds !== null) ? med(rs, (r) => r.cpuSeconds as number) : null,
      apiserverCpuMsPerCR: apiserver ? round(apiserver.median, 2) : null,
      idleWrites: Math.max(...rs.map((r) => r.idleWrites)),
      spread: { seconds: summarize(rs.map((r) => r.seconds)), peakRssMiB: rss, apiserverCpuMsPerCR: apiserver },
      runs: rs,
    };
  });
  return {
    name: 'converge',
    parameters: { ...o.converge, workers: o.workers },
    repetitions: o.repeat,
    ...f,
    ratios: {
      opkitOverGo: ratio(f.opkit?.seconds, f.go?.seconds),
      opkitOverFloor: ratio(f.opkit?.seconds, f.floor?.seconds),
      opkitOverKfc: ratio(f.opkit?.seconds, f.kfc?.seconds),
      opkitOverClientNode: ratio(f.opkit?.seconds, f.clientNode?.seconds),
      rssOpkitOverGo: ratio(f.opkit?.peakRssMiB, f.go?.peakRssMiB),
      apiserverCpuOpkitOverGo: ratio(f.opkit?.apiserverCpuMsPerCR, f.go?.apiserverCpuMsPerCR),
      requestsOpkitOverGo: ratio(f.opkit?.requestsPerCR, f.go?.requestsPerCR),
    },
  };
}

/** One rate of the sweep, over the repetitions that ran it. */
export interface ChurnRateFigures {
  rate: number;
  /** Repetitions that ran this rate (a sweep stops after its first unsustained rate). */
  runs: number;
  latencyP50Seconds: number;
  latencyP99Seconds: number;
  latencyMaxSeconds: number;
  unobserved: number;
  writesPerChange: number;
  writesPerChangeByVerb: Record<string, number>;
  /** kube-apiserver's CPU per change (ms; median), when measured. */
  apiserverCpuMsPerChange: number | null;
  /** Sustained in the majority of the repetitions that ran it. */
  sustained: boolean;
  spread: { latencyP99Seconds: Summary };
}

export interface ChurnFigures {
  /** The highest rate sustained (p99 ≤ 1 s, every change observed): median over repetitions. */
  sustainedRate: number;
  rates: ChurnRateFigures[];
  peakRssMiB: number | null;
  cpuSeconds: number | null;
  spread: { sustainedRate: Summary };
  runs: ChurnResult[];
}

async function churn(o: CompareOptions, goBinary: string): Promise<ScenarioFigures<ChurnFigures>> {
  const systems = chosen(o, SYSTEMS);
  const runs = await rotate(systems, o.repeat, async (system) => {
    const r = await churnScenario({ ...o.churn, workers: o.workers, system, goBinary, log: o.log });
    o.log(`churn ${system}: sustained ${r.sustainedRate} changes/s`);
    return r;
  });
  const f = perSystem(systems, (system): ChurnFigures => {
    const rs = runs.get(system) ?? [];
    const rates = [...o.churn.rates]
      .sort((a, b) => a - b)
      .flatMap((rate): ChurnRateFigures[] => {
        const at = rs.flatMap((r) => r.rates.filter((x) => x.rate === rate));
        if (at.length === 0) return [];
        const byVerb: Record<string, number> = {};
        for (const verb of new Set(at.flatMap((x) => Object.keys(x.writesPerChangeByVerb))))
          byVerb[verb] = med(at, (x: ChurnRate) => x.writesPerChangeByVerb[verb] ?? 0);
        return [
          {
            rate,
            runs: at.length,
            latencyP50Seconds: med(at, (x) => x.latencyP50Seconds, 3),
            latencyP99Seconds: med(at, (x) => x.latencyP99Seconds, 3),
            latencyMaxSeconds: med(at, (x) => x.latencyMaxSeconds, 3),
            unobserved: Math.max(...at.map((x) => x.unobserved)),
            writesPerChange: med(at, (x) => x.writesPerChange),
            writesPerChangeByVerb: byVerb,
            apiserverCpuMsPerChange: at.every((x) => typeof x.apiserverCpuMsPerChange === 'number')
              ? med(at, (x) => x.apiserverCpuMsPerChange as number)
              : null,
            sustained: at.filter((x) => x.sustained).length * 2 > rs.length,
            spread: { latencyP99Seconds: summarize(at.map((x) => x.latencyP99Seconds)) },
          },
        ];
      });
    return {
      sustainedRate: med(rs, (r) => r.sustainedRate, 0),
      rates,
      peakRssMiB: rs.every((r) => r.peakRssMiB !== null) ? med(rs, (r) => r.peakRssMiB as number, 1) : null,
      cpuSeconds: rs.every((r) => r.cpuSeconds !== null) ? med(rs, (r) => r.cpuSeconds as number) : null,
      spread: { sustainedRate: summarize(rs.map((r) => r.sustainedRate)) },
      runs: rs,
    };
  });
  const both = (f.opkit?.rates ?? []).filter(
    (x) => x.sustained && f.go?.rates.some((g) => g.rate === x.rate && g.sustained),
  );
  const p99 = (x: ChurnFigures | null, rate: number) => x?.rates.find((r) => r.rate === rate)?.latencyP99Seconds;
  const p50 = (x: ChurnFigures | null, rate: number) => x?.rates.find((r) => r.rate === rate)?.latencyP50Seconds;
  const ratios: Record<string, number | null> = {};
  for (const x of both) {
    ratios[`p99OpkitOverGoAt${x.rate}`] = ratio(p99(f.opkit, x.rate), p99(f.go, x.rate));
    ratios[`p50OpkitOverGoAt${x.rate}`] = ratio(p50(f.opkit, x.rate), p50(f.go, x.rate));
    ratios[`apiserverCpuOpkitOverGoAt${x.rate}`] = ratio(
      f.opkit?.rates.find((r) => r.rate === x.rate)?.apiserverCpuMsPerChange,
      f.go?.rates.find((r) => r.rate === x.rate)?.apiserverCpuMsPerChange,
    );
  }
  return {
    name: 'churn',
    parameters: { ...o.churn, workers: o.workers, sustainedP99Seconds: SUSTAINED_P99_SECONDS },
    repetitions: o.repeat,
    ...f,
    ratios: {
      opkitOverGo: ratio(f.opkit?.sustainedRate, f.go?.sustainedRate),
      opkitOverFloor: ratio(f.opkit?.sustainedRate, f.floor?.sustainedRate),
      sustainedOpkitOverKfc: ratio(f.opkit?.sustainedRate, f.kfc?.sustainedRate),
      ...ratios,
    },
  };
}

export interface IdleFigures {
  seconds: number;
  writes: number;
  cpuSeconds: number;
}

export interface RestartFigures {
  syncedSeconds: number;
  idleAfterSeconds: number;
  writes: number;
  requests: number;
  peakRssMiB: number;
  convergeSeconds: number;
  spread: { syncedSeconds: Summary; idleAfterSeconds: Summary };
  runs: SteadyResult['restarts'];
}

async function steady(
  o: CompareOptions,
  goBinary: string,
): Promise<[ScenarioFigures<IdleFigures>, ScenarioFigures<RestartFigures>]> {
  const systems = chosen(o, PEERS);
  const runs = await rotate(systems, 1, (system) =>
    steadyScenario({ ...o.steady, workers: o.workers, system, goBinary, log: o.log }),
  );
  const only = (s: SystemName) => runs.get(s as PeerName)?.[0] as SteadyResult;
  const i = perSystem(systems, (s): IdleFigures => only(s).idle, PEERS);
  const r = perSystem(
    systems,
    (s): RestartFigures => {
      const x = only(s);
      return {
        syncedSeconds: med(x.restarts, (y) => y.syncedSeconds),
        idleAfterSeconds: med(x.restarts, (y) => y.idleAfterSeconds),
        writes: Math.max(...x.restarts.map((y) => y.writes)),
        requests: med(x.restarts, (y) => y.requests, 0),
        peakRssMiB: med(x.restarts, (y) => y.peakRssMiB, 1),
        convergeSeconds: x.convergeSeconds,
        spread: {
          syncedSeconds: summarize(x.restarts.map((y) => y.syncedSeconds)),
          idleAfterSeconds: summarize(x.restarts.map((y) => y.idleAfterSeconds)),
        },
        runs: x.restarts,
      };
    },
    PEERS,
  );
  const parameters = { crs: o.steady.crs, pods: o.steady.pods, workers: o.workers };
  return [
    {
      name: 'idle',
      parameters: { ...parameters, idleSeconds: o.steady.idleSeconds },
      repetitions: 1,
      ...i,
      ratios: { opkitOverGo: ratio(i.opkit?.cpuSeconds, i.go?.cpuSeconds), opkitOverFloor: null },
    },
    {
      name: 'restart',
      parameters: { ...parameters, restarts: o.steady.restarts },
      repetitions: o.steady.restarts,
      ...r,
      ratios: {
        opkitOverGo: ratio(r.opkit?.syncedSeconds, r.go?.syncedSeconds),
        opkitOverFloor: null,
        idleAfterOpkitOverGo: ratio(r.opkit?.idleAfterSeconds, r.go?.idleAfterSeconds),
        rssOpkitOverGo: ratio(r.opkit?.peakRssMiB, r.go?.peakRssMiB),
      },
    },
  ];
}

export type ScaleFigures = ReturnType<typeof scaleFigures> & { runs: ScaleRun[] };

async function scale(o: CompareOptions, goBinary: string): Promise<ScenarioFigures<ScaleFigures>> {
  const systems = chosen(o, PEERS);
  const runs = await scaleScenario({
    sizes: o.scale.sizes,
    systems,
    repeat: o.repeat,
    workers: o.workers,
    goBinary,
    log: o.log,
  });
  const f = perSystem(
    systems,
    (s): ScaleFigures => ({
      ...scaleFigures(runs, s as PeerName),
      runs: runs.filter((r) => r.system === s),
    }),
    PEERS,
  );
  const at = (x: ScaleFigures | null, pods: number) => x?.sizes.find((s) => s.pods === pods);
  const ref = o.scale.sizes.includes(10_000) ? 10_000 : Math.max(...o.scale.sizes);
  const top = Math.max(...o.scale.sizes);
  const small = Math.min(...o.scale.sizes);
  return {
    name: 'scale',
    parameters: { sizes: o.scale.sizes, workers: o.workers },
    repetitions: o.repeat,
    ...f,
    ratios: {
      opkitOverGo: ratio(at(f.opkit, ref)?.steadyRssMiB, at(f.go, ref)?.steadyRssMiB),
      opkitOverFloor: null,
      referencePods: ref,
      bytesPerObjectOpkitOverGo: ratio(f.opkit?.bytesPerObject, f.go?.bytesPerObject),
      ...Object.fromEntries(
        [...new Set([small, ref, top])].map((n) => [
          `syncedOpkitOverGoAt${n}`,
          ratio(at(f.opkit, n)?.syncedSeconds, at(f.go, n)?.syncedSeconds),
        ]),
      ),
    },
  };
}

// ---- Markdown and charts ----

const cell = (v: number | null | undefined, unit = '') => (v === null || v === undefined ? '—' : `${v}${unit}`);
/** Issue 29's goals for RSS opkit / Go by cached pods. */
const RSS_GOALS: Record<number, string> = { 1000: '≤ 1.5', 10000: '≤ 1.0', 30000: '≤ 0.6' };
/** `Ratios: a 1.2× (goal ≤ 1.0), b 0.8×.`: the ratios this run has (a peer not run has none), with their goals. */
type RatioPart = readonly [what: string, value: number | null | undefined, goal?: string | undefined];
function ratioLine(parts: readonly RatioPart[], tail = ''): string {
  const known = parts
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([what, v, goal]) => `${what} ${v}×${goal ? ` (goal ${goal})` : ''}`);
  return known.length > 0 ? `Ratios: ${known.join(', ')}${tail}.` : 'Ratios: none (no peer ran beside opkit).';
}
const range = (s: Summary, digits = 1) => `${round(s.min, digits)}–${round(s.max, digits)}`;
/** The systems with figures in this scenario, in table order, with their figures. */
const rowsOf = <F>(s: ScenarioFigures<F>): [SystemName, F][] =>
  SYSTEMS.flatMap((x) => (s[x] === null ? [] : [[x, s[x] as F] as [SystemName, F]]));

function section(s: ScenarioFigures<unknown>): { title: string; table: string; chart?: string } {
  switch (s.name) {
    case 'converge': {
      const c = s as ScenarioFigures<ConvergeFigures>;
      const p = c.parameters as CompareOptions['converge'] & { workers: number };
      const row = ([sys, x]: [SystemName, ConvergeFigures]) => {
        const verbs = Object.entries(x.requestsPerCRByVerb)
          .map(([v, n]) => `${v} ${n}`)
          .join(', ');
        return `| ${LABEL[sys]} | ${x.seconds} (${range(x.spread.seconds)}) | ${x.latencyP50Seconds} / ${x.latencyP99Seconds} | ${x.requestsPerCR} (${verbs}) | ${cell(x.peakRssMiB)} | ${cell(x.cpuSeconds)} | ${cell(x.apiserverCpuMsPerCR)} | ${x.idleWrites} |`;
      };
      return {
        title: `converge — ${p.crs} AppServices × ${p.replicas} pods from zero`,
        table: [
          `${p.workers} workers, median of ${c.repetitions} runs per system (rotating order, a fresh control plane each); idle writes over ${p.idleSeconds} s after converging.`,
          '',
          '| system | wall time (s), median (min–max) | create → converged p50 / p99 (s) | requests per AppService | peak RSS (MiB) | CPU (s) | apiserver CPU per AppService (ms) | idle writes |',
          '| --- | --- | --- | --- | --- | --- | --- | --- |',
          ...rowsOf(c).map(row),
          '',
          ratioLine([
            ['opkit / Go', c.ratios.opkitOverGo, '≤ 0.9'],
            ['opkit / floor', c.ratios.opkitOverFloor, '≤ 1.25'],
            ['opkit / kubernetes-fluent-client', c.ratios.opkitOverKfc],
            ['opkit / client-node', c.ratios.opkitOverClientNode],
            ['RSS opkit / Go', c.ratios.rssOpkitOverGo],
            ['requests opkit / Go', c.ratios.requestsOpkitOverGo, '≤ 1'],
            ['apiserver CPU opkit / Go', c.ratios.apiserverCpuOpkitOverGo, '≤ 1.0'],
          ]),
        ].join('\n'),
        chart: barChart(
          `Time to converge ${p.crs} AppServices × ${p.replicas} pods (median, lower is better)`,
          's',
          rowsOf(c).map(([sys, x]) => ({ label: LABEL[sys], bars: [{ name: 'wall time', value: x.seconds }] })),
        ),
      };
    }
    case 'churn': {
      const c = s as ScenarioFigures<ChurnFigures>;
      const p = c.parameters as CompareOptions['churn'] & { workers: number };
      const rates = [...p.rates].sort((a, b) => a - b);
      const at = (x: ChurnFigures, rate: number) => {
        const r = x.rates.find((y) => y.rate === rate);
        if (!r) return 'not run';
        const mark = r.sustained ? '' : ' ✗';
        const cpu = r.apiserverCpuMsPerChange === null ? '' : `, ${r.apiserverCpuMsPerChange} ms`;
        return `${r.latencyP50Seconds} / ${r.latencyP99Seconds}${cpu}${mark}`;
      };
      const writes = (x: ChurnFigures) => {
        const r = x.rates.find((y) => y.sustained) ?? x.rates[0];
        return r ? `${r.writesPerChange} at ${r.rate}/s` : '—';
      };
      const atRates = (q: 'p50' | 'p99' | 'apiserverCpu') =>
        Object.entries(c.ratios)
          .filter(([k, v]) => k.startsWith(`${q}OpkitOverGoAt`) && v !== null)
          .map(([k, v]) => `${k.slice(`${q}OpkitOverGoAt`.length)}/s ${v}×`)
          .join(', ') || '—';
      return {
        title: `churn — a rate sweep (${rates.join(', ')} spec changes per second, ${p.seconds} s each) on ${p.crs} AppServices at rest`,
        table: [
          `Each change flips one AppService between 1 and 2 replicas; latency is change → a status reporting the new count for that generation, seen by a watching client. Each cell is p50 / p99 and, after the comma, kube-apiserver's CPU per change (ms, from /proc over the rate). A rate is sustained when p99 ≤ ${SUSTAINED_P99_SECONDS} s and every change was observed; each sweep stops after its first unsustained rate (✗). ${p.workers} workers, median of ${c.repetitions} sweeps per system, each on a fresh control plane.`,
          '',
          `| system | highest sustained rate (/s), median (min–max) | ${rates.map((r) => `p50 / p99 (s), apiserver CPU at ${r}/s`).join(' | ')} | writes per change | peak RSS (MiB) | CPU (s) |`,
          `| --- | --- |${' --- |'.repeat(rates.length + 3)}`,
          ...rowsOf(c).map(
            ([sys, x]) =>
              `| ${LABEL[sys]} | ${x.sustainedRate} (${range(x.spread.sustainedRate, 0)}) | ${rates.map((r) => at(x, r)).join(' | ')} | ${writes(x)} | ${cell(x.peakRssMiB)} | ${cell(x.cpuSeconds)} |`,
          ),
          '',
          ratioLine(
            [
              ['sustained rate opkit / Go', c.ratios.opkitOverGo, '≥ 1.0'],
              ['opkit / kubernetes-fluent-client', c.ratios.sustainedOpkitOverKfc],
            ],
            `; at the rates both opkit and Go sustain (goal ≤ 1.0), p50 opkit / Go ${atRates('p50')}, p99 opkit / Go ${atRates('p99')}, apiserver CPU per change opkit / Go (goal ≤ 1.0) ${atRates('apiserverCpu')}`,
          ),
        ].join('\n'),
        chart: lineChart(
          'p99 change → status observed vs change rate (median, lower is better)',
          'changes per second',
          'p99 (s)',
          rowsOf(c).map(([sys, x]) => ({
            label: LABEL[sys],
            points: x.rates.map((r) => [r.rate, r.latencyP99Seconds] as const),
          })),
        ),
      };
    }
    case 'idle': {
      const c = s as ScenarioFigures<IdleFigures>;
      const p = c.parameters as { crs: number; pods: number; idleSeconds: number };
      return {
        title: `idle — ${p.idleSeconds >= 60 ? `${round(p.idleSeconds / 60, 1)} minutes` : `${p.idleSeconds} s`} at rest with ${p.crs} AppServices and ${p.pods} pods`,
        table: [
          'Writes exclude Lease renewals (leader election). One run per system, after it converged the state itself.',
          '',
          '| system | writes | CPU (s) |',
          '| --- | --- | --- |',
          ...rowsOf(c).map(([sys, x]) => `| ${LABEL[sys]} | ${x.writes} | ${x.cpuSeconds} |`),
          '',
          `CPU opkit / Go ${cell(c.ratios.opkitOverGo)}×. Goal: 0 writes.`,
        ].join('\n'),
      };
    }
    case 'restart': {
      const c = s as ScenarioFigures<RestartFigures>;
      const p = c.parameters as { crs: number; pods: number; restarts: number };
      return {
        title: `restart — a new process with ${p.crs} AppServices and ${p.pods} pods present`,
        table: [
          `Median of ${p.restarts} restarts per system (SIGTERM, then a new process). Synced: spawn → the status of a probe AppService created at spawn is observed. Idle: spawn → its last request (watches and Lease renewals aside). Writes exclude the probe's own and Lease renewals: 0 means nothing was rewritten.`,
          '',
          '| system | synced (s), median (min–max) | idle after (s), median (min–max) | writes | requests | peak RSS (MiB) | first converge (s) |',
          '| --- | --- | --- | --- | --- | --- | --- |',
          ...rowsOf(c).map(
            ([sys, x]) =>
              `| ${LABEL[sys]} | ${x.syncedSeconds} (${range(x.spread.syncedSeconds, 2)}) | ${x.idleAfterSeconds} (${range(x.spread.idleAfterSeconds, 2)}) | ${x.writes} | ${x.requests} | ${x.peakRssMiB} | ${x.convergeSeconds} |`,
          ),
          '',
          ratioLine([
            ['synced opkit / Go', c.ratios.opkitOverGo, '≤ 1.0'],
            ['idle after opkit / Go', c.ratios.idleAfterOpkitOverGo],
            ['RSS opkit / Go', c.ratios.rssOpkitOverGo],
          ]),
        ].join('\n'),
      };
    }
    case 'scale': {
      const c = s as ScenarioFigures<ScaleFigures>;
      const sizes = (c.parameters as { sizes: number[] }).sizes;
      const pods = (n: number) => `${n.toLocaleString('en-US')} pods`;
      const rssAt = (sys: SystemName, n: number) =>
        (c[sys] as ScaleFigures | null)?.sizes.find((z) => z.pods === n)?.steadyRssMiB;
      return {
        title: `scale — memory and start-up at ${sizes.map((n) => n.toLocaleString('en-US')).join(' / ')} cached pods`,
        table: [
          `Pods with the operator's labels and no owner (cached, nothing to reconcile); each system started ${c.repetitions} times per size in rotating order, as shipped (opkit with its Deployment's environment). Steady RSS 5 s after the caches synced; bytes per object = the slope of steady RSS between the smallest and largest size.`,
          '',
          `| system | ${sizes.map((n) => `RSS at ${n.toLocaleString('en-US')} (MiB)`).join(' | ')} | ${sizes.map((n) => `synced at ${n.toLocaleString('en-US')} (s)`).join(' | ')} | bytes per object |`,
          `| --- |${' --- |'.repeat(sizes.length * 2 + 1)}`,
          ...rowsOf(c).map(([sys, x]) => {
            const at = (n: number) => x.sizes.find((z) => z.pods === n);
            return `| ${LABEL[sys]} | ${sizes.map((n) => cell(at(n)?.steadyRssMiB)).join(' | ')} | ${sizes.map((n) => cell(at(n)?.syncedSeconds)).join(' | ')} | ${cell(x.bytesPerObject)} |`;
          }),
          '',
          ratioLine([
            ...sizes.map(
              (n): RatioPart => [
                `RSS opkit / Go at ${pods(n)}`,
                ratio(rssAt('opkit', n), rssAt('go', n)),
                RSS_GOALS[n],
              ],
            ),
            ['bytes per object opkit / Go', c.ratios.bytesPerObjectOpkitOverGo],
            ...sizes.map(
              (n): RatioPart => [
                `synced opkit / Go at ${pods(n)}`,
                c.ratios[`syncedOpkitOverGoAt${n}`],
                n >= 10_000 ? '≤ 1.0' : undefined,
              ],
            ),
          ]),
        ].join('\n'),
        chart: lineChart(
          'Operator RSS vs cached pods (median, lower is better)',
          'cached pods',
          'RSS (MiB)',
          rowsOf(c).map(([sys, x]) => ({
            label: LABEL[sys],
            points: x.sizes.map((z) => [z.pods, z.steadyRssMiB] as const),
          })),
        ),
      };
    }
  }
}

export function compareMarkdown(r: CompareResult): string {
  return r.scenarios
    .map((s) => {
      const { title, table } = section(s);
      return `### ${title}\n\n${table}`;
    })
    .join('\n\n');
}

const DOCS = new URL('../../../docs/', import.meta.url);

/** Rewrites each measured scenario's section (and chart) of docs/benchmarks.md; other sections are kept. */
export async function writeDocs(r: CompareResult): Promise<void> {
  const path = fileURLToPath(new URL('benchmarks.md', DOCS));
  let doc = await readFile(path, 'utf8');
  for (const s of r.scenarios) {
    const { title, table, chart } = section(s);
    const begin = `<!-- BEGIN compare:${s.name} (generated by npm run bench -- compare --scenario ${s.name} --docs) -->`;
    const end = `<!-- END compare:${s.name} -->`;
    if (chart) await writeFile(fileURLToPath(new URL(`benchmarks-${s.name}.svg`, DOCS)), chart);
    const body = `${begin}\n### ${title}\n\n\`npm run bench -- compare --scenario ${s.name} --docs\` (${r.machine})\n\n${table}${chart ? `\n\n![${s.name}](benchmarks-${s.name}.svg)` : ''}\n${end}`;
    const at = doc.indexOf(`<!-- BEGIN compare:${s.name} `);
    doc =
      at >= 0 ? doc.slice(0, at) + body + doc.slice(doc.indexOf(end) + end.length) : `${doc.trimEnd()}\n\n${body}\n`;
  }
  await writeFile(path, doc);
}
