/**
 * @module scenarios/env-start
 * How fast and how big is the local control plane? Starts it `repeat` times from warm binaries (3 kwok nodes, to
 * every node Ready and the default ServiceAccount present), sums the components' resident memory 5 s after ready,
 * and reports the cold build time recorded when the cached binaries were built.
 * Goal: warm start ≤ 10 s.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readCacheManifest, resolveBinaries, start } from '@opkit/testenv';
import { rssBytes } from '../proc.ts';
import { round, type Summary, summarize } from '../stats.ts';

export interface EnvStartResult {
  readonly warmStartSeconds: number;
  readonly coldBuildSeconds: number | null;
  readonly controlPlaneRssMiB: number;
  readonly warmStart: Summary;
  readonly rssMiB: Summary;
  readonly componentRssMiB: Record<string, number>;
  readonly goalWarmStartSeconds: 10;
}

export async function envStart(options: { repeat: number; log: (line: string) => void }): Promise<EnvStartResult> {
  await resolveBinaries({ log: options.log });
  const manifest = await readCacheManifest();
  const starts: number[] = [];
  const rss: number[] = [];
  let components: Record<string, number> = {};
  for (let i = 0; i < options.repeat; i++) {
    const t0 = performance.now();
    const env = await start({ nodes: 3, log: () => {} });
    const seconds = (performance.now() - t0) / 1000;
    try {
      await sleep(5_000);
      const perComponent: Record<string, number> = {};
      for (const [name, pid] of Object.entries(env.pids))
        perComponent[name] = round((await rssBytes(pid)) / 2 ** 20, 1);
      const total = Object.values(perComponent).reduce((a, b) => a + b, 0);
      starts.push(seconds);
      rss.push(total);
      components = perComponent;
      options.log(
        `run ${i + 1}/${options.repeat}: ready in ${seconds.toFixed(2)} s, control plane RSS ${total.toFixed(0)} MiB`,
      );
    } finally {
      await env.stop();
    }
  }
  const warmStart = summarize(starts);
  const rssMiB = summarize(rss);
  return {
    warmStartSeconds: round(warmStart.median),
    coldBuildSeconds: manifest ? manifest.buildSeconds : null,
    controlPlaneRssMiB: round(rssMiB.median, 0),
    warmStart: { ...warmStart, median: round(warmStart.median), min: round(warmStart.min), max: round(warmStart.max) },
    rssMiB,
    componentRssMiB: components,
    goalWarmStartSeconds: 10,
  };
}

export function envStartMarkdown(r: EnvStartResult): string {
  return [
    '| figure | median | spread (min–max) | goal |',
    '| --- | --- | --- | --- |',
    `| warm start to ready (s) | ${r.warmStartSeconds} | ${r.warmStart.min}–${r.warmStart.max} (n=${r.warmStart.n}) | ≤ ${r.goalWarmStartSeconds} |`,
    `| control-plane RSS (MiB) | ${r.controlPlaneRssMiB} | ${round(r.rssMiB.min, 0)}–${round(r.rssMiB.max, 0)} | — |`,
    `| cold build (s) | ${r.coldBuildSeconds ?? 'n/a (binaries not built by opkit)'} | one build | — |`,
    '',
    `RSS by component (last run, MiB): ${Object.entries(r.componentRssMiB)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  ].join('\n');
}
