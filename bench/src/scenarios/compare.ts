/**
 * @module scenarios/compare
 * opkit side by side with its peers (Go controller-runtime, @kubernetes/client-node) and the floor, on the same
 * job, each alone on a fresh control plane, `repeat` times in rotating order; medians, spreads and ratios.
 * Scenario implemented: `converge` (with its idle window). Writes the Markdown section and an SVG chart into
 * docs/benchmarks.md / docs/benchmarks-converge.svg when asked.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { goPeerBinary } from '../peers.ts';
import { round, type Summary, summarize } from '../stats.ts';
import { type ConvergeResult, convergeScenario, type SystemName } from './converge.ts';

const SYSTEMS: readonly SystemName[] = ['opkit', 'go', 'clientNode', 'floor'];
const LABEL: Record<SystemName, string> = {
  opkit: 'opkit',
  go: 'Go controller-runtime',
  clientNode: 'client-node',
  floor: 'floor',
};

export interface SystemFigures {
  seconds: number;
  latencyP50Seconds: number;
  latencyP99Seconds: number;
  requestsPerCR: number;
  requestsPerCRByVerb: Record<string, number>;
  peakRssMiB: number | null;
  cpuSeconds: number | null;
  idleWrites: number;
  spread: { seconds: Summary; peakRssMiB: Summary | null };
  runs: ConvergeResult[];
}

export interface CompareResult {
  scenarios: {
    name: 'converge';
    crs: number;
    replicas: number;
    workers: number;
    repetitions: number;
    opkit: SystemFigures;
    go: SystemFigures;
    clientNode: SystemFigures;
    floor: SystemFigures;
    ratios: {
      opkitOverGo: number;
      opkitOverFloor: number;
      opkitOverClientNode: number;
      rssOpkitOverGo: number | null;
      requestsOpkitOverGo: number;
    };
  }[];
}

export async function compareScenario(o: {
  crs: number;
  replicas: number;
  workers: number;
  idleSeconds: number;
  repeat: number;
  log: (line: string) => void;
}): Promise<CompareResult> {
  const goBinary = await goPeerBinary(o.log);
  const runs = new Map<SystemName, ConvergeResult[]>(SYSTEMS.map((s) => [s, []]));
  for (let i = 0; i < o.repeat; i++) {
    const order = SYSTEMS.map((_, j) => SYSTEMS[(i + j) % SYSTEMS.length] as SystemName);
    for (const system of order) {
      const r = await convergeScenario({ ...o, system, goBinary });
      runs.get(system)?.push(r);
      o.log(
        `run ${i + 1}/${o.repeat} ${system}: ${r.seconds} s, ${r.requestsPerCR} req/CR, RSS ${r.peakRssMiB ?? '-'} MiB, CPU ${r.cpuSeconds ?? '-'} s, idle writes ${r.idleWrites}`,
      );
    }
  }
  const figures = (system: SystemName): SystemFigures => {
    const rs = runs.get(system) ?? [];
    const med = (f: (r: ConvergeResult) => number) => round(summarize(rs.map(f)).median, 2);
    const rss = rs.every((r) => r.peakRssMiB !== null) ? summarize(rs.map((r) => r.peakRssMiB as number)) : null;
    const byVerb: Record<string, number> = {};
    for (const verb of new Set(rs.flatMap((r) => Object.keys(r.requestsPerCRByVerb))))
      byVerb[verb] = med((r) => r.requestsPerCRByVerb[verb] ?? 0);
    return {
      seconds: med((r) => r.seconds),
      latencyP50Seconds: med((r) => r.latencyP50Seconds),
      latencyP99Seconds: med((r) => r.latencyP99Seconds),
      requestsPerCR: med((r) => r.requestsPerCR),
      requestsPerCRByVerb: byVerb,
      peakRssMiB: rss ? round(rss.median, 1) : null,
      cpuSeconds: rs.every((r) => r.cpuSeconds !== null) ? med((r) => r.cpuSeconds as number) : null,
      idleWrites: Math.max(...rs.map((r) => r.idleWrites)),
      spread: { seconds: summarize(rs.map((r) => r.seconds)), peakRssMiB: rss },
      runs: rs,
    };
  };
  const f = { opkit: figures('opkit'), go: figures('go'), clientNode: figures('clientNode'), floor: figures('floor') };
  return {
    scenarios: [
      {
        name: 'converge',
        crs: o.crs,
        replicas: o.replicas,
        workers: o.workers,
        repetitions: o.repeat,
        ...f,
        ratios: {
          opkitOverGo: round(f.opkit.seconds / f.go.seconds, 2),
          opkitOverFloor: round(f.opkit.seconds / f.floor.seconds, 2),
          opkitOverClientNode: round(f.opkit.seconds / f.clientNode.seconds, 2),
          rssOpkitOverGo: f.opkit.peakRssMiB && f.go.peakRssMiB ? round(f.opkit.peakRssMiB / f.go.peakRssMiB, 2) : null,
          requestsOpkitOverGo: round(f.opkit.requestsPerCR / f.go.requestsPerCR, 2),
        },
      },
    ],
  };
}

export function compareMarkdown(r: CompareResult): string {
  const s = r.scenarios[0];
  if (!s) return '';
  const cell = (v: number | null, unit = '') => (v === null ? '—' : `${v}${unit}`);
  const row = (sys: SystemName) => {
    const x = s[sys];
    return `| ${LABEL[sys]} | ${x.seconds} (${round(x.spread.seconds.min, 1)}–${round(x.spread.seconds.max, 1)}) | ${x.latencyP50Seconds} / ${x.latencyP99Seconds} | ${x.requestsPerCR} (${Object.entries(
      x.requestsPerCRByVerb,
    )
      .map(([v, n]) => `${v} ${n}`)
      .join(', ')}) | ${cell(x.peakRssMiB)} | ${cell(x.cpuSeconds)} | ${x.idleWrites} |`;
  };
  return [
    `converge: ${s.crs} AppServices × ${s.replicas} pods, ${s.workers} workers, median of ${s.repetitions} runs per system (rotating order, a fresh control plane each)`,
    '',
    '| system | wall time (s), median (min–max) | create → converged p50 / p99 (s) | requests per AppService | peak RSS (MiB) | CPU (s) | idle writes |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...SYSTEMS.map(row),
    '',
    `Ratios: opkit / Go ${s.ratios.opkitOverGo}× (goal ≤ 1.0), opkit / floor ${s.ratios.opkitOverFloor}× (goal ≤ 1.25), opkit / client-node ${s.ratios.opkitOverClientNode}×, RSS opkit / Go ${s.ratios.rssOpkitOverGo ?? '—'}×, requests opkit / Go ${s.ratios.requestsOpkitOverGo}× (goal ≤ 1).`,
  ].join('\n');
}

/** A bar chart of the median convergence time per system. */
export function convergeSvg(r: CompareResult): string {
  const s = r.scenarios[0];
  if (!s) return '';
  const max = Math.max(...SYSTEMS.map((x) => s[x].seconds));
  const bars = SYSTEMS.map((sys, i) => {
    const w = Math.round((s[sys].seconds / max) * 420);
    const y = 40 + i * 36;
    return `<text x="10" y="${y + 17}" font-size="13">${LABEL[sys]}</text><rect x="170" y="${y}" width="${w}" height="24" fill="${sys === 'opkit' ? '#2b6cb0' : '#a0aec0'}"/><text x="${176 + w}" y="${y + 17}" font-size="13">${s[sys].seconds} s</text>`;
  }).join('');
  const title = `Time to converge ${s.crs} AppServices × ${s.replicas} pods (median, lower is better)`;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="680" height="${60 + SYSTEMS.length * 36}" font-family="sans-serif" role="img" aria-label="${title}"><title>${title}</title><text x="10" y="22" font-size="15">${title}</text>${bars}</svg>\n`;
}

const DOC = fileURLToPath(new URL('../../../docs/benchmarks.md', import.meta.url));
const BEGIN = '<!-- BEGIN compare (generated by npm run bench -- compare --docs) -->';
const END = '<!-- END compare -->';

export async function writeDocs(r: CompareResult, machine: string): Promise<void> {
  await writeFile(fileURLToPath(new URL('../../../docs/benchmarks-converge.svg', import.meta.url)), convergeSvg(r));
  const section = `${BEGIN}\n## compare — opkit side by side with Go controller-runtime, client-node and the floor\n\n\`npm run bench -- compare --json bench/results/compare.json --docs\` (${machine})\n\n${compareMarkdown(r)}\n\n![converge](benchmarks-converge.svg)\n${END}`;
  const doc = await readFile(DOC, 'utf8');
  const at = doc.indexOf(BEGIN);
  const next =
    at >= 0
      ? doc.slice(0, at) + section + doc.slice(doc.indexOf(END) + END.length)
      : `${doc.trimEnd()}\n\n${section}\n`;
  await writeFile(DOC, next);
}
