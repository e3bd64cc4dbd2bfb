/**
 * @module scenarios/restart-limit
 * `npm run bench -- restart-limit`: restart to synced against its limit. `crs` AppServices owning `pods` pods,
 * converged by the AppService operator on a fresh control plane; then `rounds` rounds, each restarting in rotating
 * order the AppService operator, the Go controller-runtime peer and a bare Node process doing only what a restart must
 * (children/bare-restart.ts: list AppServices and pods, watch, write the probe's status). Time per start: spawn → the
 * status of a probe AppService created at spawn is observed, as the compare benchmark's restart measures it. Figures:
 * per system, the median and spread of its starts; ratios opkit / Go and opkit / bare.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { AppServices, NAME, NAMESPACE } from '@opkit/appservice';
import { loadConfig } from '@opkit/runtime/client';
import {
  BENCH_NAMESPACE,
  benchEnv,
  convergedCount,
  createAppServices,
  probeSynced,
  spreadPods,
  stopProcess,
  waitUntil,
  watchAppServices,
} from '../harness.ts';
import { goPeerBinary, startPeer } from '../peers.ts';
import { round, type Summary, summarize } from '../stats.ts';

export type LimitSystem = 'opkit' | 'go' | 'bare';
const SYSTEMS: readonly LimitSystem[] = ['opkit', 'go', 'bare'];
const BARE = fileURLToPath(new URL('../children/bare-restart.ts', import.meta.url));

export interface RestartLimitOptions {
  readonly crs: number;
  readonly pods: number;
  readonly rounds: number;
  readonly workers: number;
  readonly log: (line: string) => void;
}

export interface RestartLimitResult {
  readonly crs: number;
  readonly pods: number;
  readonly rounds: number;
  /** Spawn → probe status observed, seconds, one per round. */
  readonly syncedSeconds: Record<LimitSystem, number[]>;
  readonly median: Record<LimitSystem, number>;
  readonly spread: Record<LimitSystem, Summary>;
  readonly ratios: { readonly opkitOverGo: number; readonly opkitOverBare: number };
}

export async function restartLimitScenario(o: RestartLimitOptions): Promise<RestartLimitResult> {
  const goBinary = await goPeerBinary(o.log);
  const bench = await benchEnv(o.pods);
  const ctl = new AbortController();
  let proc: ChildProcess | undefined;
  const synced: Record<LimitSystem, number[]> = { opkit: [], go: [], bare: [] };
  try {
    const observed = await watchAppServices(bench.admin, ctl.signal);
    proc = await startPeer('opkit', bench.kubeconfig, o.workers);
    await createAppServices(bench.admin, o.crs, spreadPods(o.crs, o.pods));
    await waitUntil(`converging ${o.pods} pods`, () => convergedCount(observed) >= o.crs, 20 * 60_000, proc);
    await stopProcess(proc);
    const sa = await bench.env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    const admin = await loadConfig({ path: bench.env.kubeconfigPath });
    const bareEnv = { BARE_SERVER: admin.server, BARE_CA: admin.ca ?? '', BARE_TOKEN: sa.token };
    let k = 0;
    for (let r = 0; r < o.rounds; r++) {
      for (const system of SYSTEMS.map((_, i) => SYSTEMS[(i + r) % SYSTEMS.length] as LimitSystem)) {
        const probe = `probe-${k++}`;
        const t = performance.now();
        proc =
          system === 'bare'
            ? spawn(process.execPath, [BARE], {
                stdio: ['ignore', 'ignore', 'inherit'],
                env: { ...process.env, ...bareEnv, BARE_PROBE: probe },
              })
            : await startPeer(system, bench.kubeconfig, o.workers, goBinary);
        const seconds = await probeSynced(bench.admin, observed, probe, proc, t, 5 * 60_000);
        synced[system].push(round(seconds, 3));
        o.log(`restart-limit round ${r + 1}: ${system} synced in ${seconds.toFixed(3)} s`);
        await stopProcess(proc);
        await bench.admin.delete(AppServices, { namespace: BENCH_NAMESPACE, name: probe });
      }
    }
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await bench.stop();
  }
  const median = (s: LimitSystem) => round(summarize(synced[s]).median, 3);
  const m = { opkit: median('opkit'), go: median('go'), bare: median('bare') };
  return {
    crs: o.crs,
    pods: o.pods,
    rounds: o.rounds,
    syncedSeconds: synced,
    median: m,
    spread: { opkit: summarize(synced.opkit), go: summarize(synced.go), bare: summarize(synced.bare) },
    ratios: { opkitOverGo: round(m.opkit / m.go, 2), opkitOverBare: round(m.opkit / m.bare, 2) },
  };
}

export function restartLimitMarkdown(r: RestartLimitResult): string {
  const label: Record<LimitSystem, string> = {
    opkit: 'opkit',
    go: 'Go controller-runtime',
    bare: 'bare Node (lists, watch, one status write)',
  };
  return [
    `Restart to synced with ${r.crs} AppServices and ${r.pods} pods present, ${r.rounds} rounds in rotating order; spawn → the probe's status observed (s).`,
    '',
    '| system | median | min–max |',
    '| --- | --- | --- |',
    ...SYSTEMS.map((s) => `| ${label[s]} | ${r.median[s]} | ${r.spread[s].min}–${r.spread[s].max} |`),
    '',
    `Ratios: opkit / Go ${r.ratios.opkitOverGo}×, opkit / bare Node ${r.ratios.opkitOverBare}×.`,
  ].join('\n');
}
