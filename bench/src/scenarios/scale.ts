/**
 * @module scenarios/scale
 * Memory and start-up against the number of cached objects: one control plane filled step by step with pods the
 * operators cache (the operator's labels, bound to kwok nodes, no owner — nothing to reconcile), and at each size each
 * system started `repeat` times in rotating order: time to caches synced (spawn → the status of a probe AppService
 * created at spawn is observed), then its RSS 5 s later (steady) and at its peak. Bytes per cached object are the slope
 * of the steady RSS between the smallest and the largest size.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppServices } from '@opkit/appservice';
import { Cache } from '@opkit/runtime/cache';
import type { Client } from '@opkit/runtime/client';
import { Nodes, Pods } from '@opkit/runtime/kinds';
import {
  BENCH_NAMESPACE,
  benchEnv,
  probeSynced,
  sampleRss,
  stopProcess,
  waitUntil,
  watchAppServices,
} from '../harness.ts';
import { type PeerName, startPeer, warmCompileCache } from '../peers.ts';
import { round, summarize } from '../stats.ts';

export interface ScaleRun {
  readonly system: PeerName;
  readonly pods: number;
  readonly syncedSeconds: number;
  readonly steadyRssMiB: number;
  readonly peakRssMiB: number;
}

export interface ScaleOptions {
  readonly sizes: readonly number[];
  readonly systems: readonly PeerName[];
  readonly repeat: number;
  readonly workers: number;
  readonly goBinary: string;
  readonly log: (line: string) => void;
}

/** The operator's labels: every system caches these pods, whichever selector it uses. */
const LABELS = {
  'app.kubernetes.io/name': 'appservice',
  'app.kubernetes.io/instance': 'scale',
  'app.kubernetes.io/managed-by': 'appservice-operator',
};

export async function scaleScenario(o: ScaleOptions): Promise<ScaleRun[]> {
  const sizes = [...o.sizes].sort((a, b) => a - b);
  warmCompileCache(); // now, not inside the first timed start
  const bench = await benchEnv(sizes[sizes.length - 1] ?? 0);
  const ctl = new AbortController();
  let proc: ChildProcess | undefined;
  const runs: ScaleRun[] = [];
  try {
    const observed = await watchAppServices(bench.admin, ctl.signal);
    const pods = new Cache({ client: bench.admin, namespace: BENCH_NAMESPACE }).informer(Pods);
    pods.start(ctl.signal);
    await pods.waitForSync();
    const nodes = (await bench.admin.list(Nodes)).items.map((n) => n.metadata.name as string);
    let created = 0;
    for (const size of sizes) {
      const t0 = performance.now();
      created = await fill(bench.admin, nodes, created, size);
      const running = () => pods.store.size >= size && pods.store.list().every((p) => p.status?.phase === 'Running');
      await waitUntil(`${size} pods running`, running, 20 * 60_000);
      o.log(`scale: ${size} pods running (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
      await sleep(3_000);
      for (let rep = 0; rep < o.repeat; rep++) {
        for (let j = 0; j < o.systems.length; j++) {
          const system = o.systems[(rep + j) % o.systems.length] as PeerName;
          const t = performance.now();
          proc = await startPeer(system, bench.kubeconfig, o.workers, o.goBinary);
          const rss = sampleRss(proc.pid);
          const probe = `probe-${size}-${system.toLowerCase()}-${rep}`;
          const syncedSeconds = await probeSynced(bench.admin, observed, probe, proc, t, 10 * 60_000);
          await sleep(5_000);
          const run = {
            system,
            pods: size,
            syncedSeconds: round(syncedSeconds, 2),
            steadyRssMiB: round(rss.last() / 2 ** 20, 1),
            peakRssMiB: round(rss.peak() / 2 ** 20, 1),
          };
          rss.stop();
          runs.push(run);
          o.log(
            `scale ${size} ${system}: synced ${run.syncedSeconds} s, RSS ${run.steadyRssMiB} MiB (peak ${run.peakRssMiB})`,
          );
          await stopProcess(proc);
          await bench.admin.delete(AppServices, { namespace: BENCH_NAMESPACE, name: probe });
        }
      }
    }
    return runs;
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await bench.stop();
  }
}

/** Creates pods `from`…`to - 1`, 64 in flight, bound round-robin to the kwok nodes. */
async function fill(admin: Client, nodes: readonly string[], from: number, to: number): Promise<number> {
  let next = from;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < to) {
        const i = next++;
        await admin.create(Pods, {
          metadata: { name: `cached-${i}`, namespace: BENCH_NAMESPACE, labels: LABELS },
          spec: {
            nodeName: nodes[i % nodes.length] as string,
            containers: [{ name: 'app', image: 'busybox', command: ['sleep', 'infinity'] }],
          },
        });
      }
    }),
  );
  return to;
}

/** Per system: the median synced time and steady RSS at each size, and bytes per cached object. */
export function scaleFigures(runs: readonly ScaleRun[], system: PeerName) {
  const mine = runs.filter((r) => r.system === system);
  const sizes = [...new Set(mine.map((r) => r.pods))].sort((a, b) => a - b);
  const at = sizes.map((pods) => {
    const rs = mine.filter((r) => r.pods === pods);
    return {
      pods,
      syncedSeconds: round(summarize(rs.map((r) => r.syncedSeconds)).median, 2),
      steadyRssMiB: round(summarize(rs.map((r) => r.steadyRssMiB)).median, 1),
      peakRssMiB: round(summarize(rs.map((r) => r.peakRssMiB)).median, 1),
    };
  });
  const lo = at[0];
  const hi = at[at.length - 1];
  const bytesPerObject =
    lo && hi && hi.pods > lo.pods
      ? Math.round(((hi.steadyRssMiB - lo.steadyRssMiB) * 2 ** 20) / (hi.pods - lo.pods))
      : null;
  return { sizes: at, bytesPerObject };
}
