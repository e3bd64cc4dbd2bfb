/**
 * @module scenarios/steady
 * A system at rest with a large converged state — `crs` AppServices owning `pods` pods in all, converged by the system
 * itself on a fresh control plane — then:
 * - `idle`: `idleSeconds` of nothing changing → its writes (must be 0; Lease renewals aside) and CPU seconds;
 * - `restart`: `restarts` times, SIGTERM then a new process → time to caches synced (spawn → the status of a probe
 *   AppService created at spawn is observed: a system reconciles only once its caches are synced), time to idle
 *   (spawn → its last request, once it has made none for 10 s), writes performed (0 when nothing changed; the probe's
 *   own status and Lease renewals aside) and peak RSS.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppServices } from '@opkit/appservice';
import { type AuditEvent, auditLogSize, readAuditLog, WRITE_VERBS } from '@opkit/testenv';
import {
  BENCH_NAMESPACE,
  benchEnv,
  convergedCount,
  createAppServices,
  probeSynced,
  sampleRss,
  spreadPods,
  stopProcess,
  USER,
  waitUntil,
  watchAppServices,
} from '../harness.ts';
import { type PeerName, startPeer } from '../peers.ts';
import { cpuSeconds } from '../proc.ts';
import { round } from '../stats.ts';

export interface RestartRun {
  readonly syncedSeconds: number;
  readonly idleAfterSeconds: number;
  readonly writes: number;
  readonly requests: number;
  readonly peakRssMiB: number;
}

export interface SteadyResult {
  readonly system: PeerName;
  readonly crs: number;
  readonly pods: number;
  readonly convergeSeconds: number;
  readonly idle: { readonly seconds: number; readonly writes: number; readonly cpuSeconds: number };
  readonly restarts: RestartRun[];
}

export interface SteadyOptions {
  readonly system: PeerName;
  readonly crs: number;
  readonly pods: number;
  readonly idleSeconds: number;
  readonly restarts: number;
  readonly workers: number;
  readonly goBinary?: string;
  readonly log: (line: string) => void;
}

/** Writes that count: not Lease renewals, not the probe's status or its Events. */
const counted = (e: AuditEvent) =>
  WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases' && !e.objectRef?.name?.startsWith('probe-');

export async function steadyScenario(o: SteadyOptions): Promise<SteadyResult> {
  const bench = await benchEnv(o.pods);
  let proc: ChildProcess | undefined;
  const ctl = new AbortController();
  try {
    proc = await startPeer(o.system, bench.kubeconfig, o.workers, o.goBinary);
    const observed = await watchAppServices(bench.admin, ctl.signal);
    const t0 = performance.now();
    await createAppServices(bench.admin, o.crs, spreadPods(o.crs, o.pods));
    const converged = () => convergedCount(observed) >= o.crs;
    await waitUntil(`${o.system} converging ${o.pods} pods`, converged, 20 * 60_000, proc);
    const convergeSeconds = (performance.now() - t0) / 1000;
    o.log(`${o.system}: ${o.crs} AppServices, ${o.pods} pods converged in ${convergeSeconds.toFixed(1)} s`);
    await quiet(bench.auditLog, await auditLogSize(bench.auditLog), 10_000);

    const idleFrom = await auditLogSize(bench.auditLog);
    const cpu0 = await cpuSeconds(proc.pid as number);
    await sleep(o.idleSeconds * 1000);
    const idle = {
      seconds: o.idleSeconds,
      writes: (await readAuditLog(bench.auditLog, { from: idleFrom, username: USER })).events.filter(counted).length,
      cpuSeconds: round((await cpuSeconds(proc.pid as number)) - cpu0, 2),
    };
    o.log(`${o.system}: idle ${o.idleSeconds} s → ${idle.writes} writes, ${idle.cpuSeconds} s CPU`);

    const restarts: RestartRun[] = [];
    for (let k = 0; k < o.restarts; k++) {
      await stopProcess(proc);
      const from = await auditLogSize(bench.auditLog);
      const spawnedAt = Date.now();
      const t = performance.now();
      proc = await startPeer(o.system, bench.kubeconfig, o.workers, o.goBinary);
      const rss = sampleRss(proc.pid);
      const probe = `probe-${k}`;
      const syncedSeconds = await probeSynced(bench.admin, observed, probe, proc, t, 5 * 60_000);
      const events = await quiet(bench.auditLog, from, 10_000);
      rss.stop();
      const active = events.filter((e) => e.verb !== 'watch' && e.objectRef?.resource !== 'leases');
      const last = Math.max(spawnedAt, ...active.map((e) => Date.parse(e.stageTimestamp ?? '') || 0));
      const run = {
        syncedSeconds: round(syncedSeconds, 2),
        idleAfterSeconds: round((last - spawnedAt) / 1000, 2),
        writes: events.filter(counted).length,
        requests: active.filter((e) => !e.objectRef?.name?.startsWith('probe-')).length,
        peakRssMiB: round(rss.peak() / 2 ** 20, 1),
      };
      restarts.push(run);
      o.log(
        `${o.system}: restart ${k + 1}: synced ${run.syncedSeconds} s, idle after ${run.idleAfterSeconds} s, ${run.writes} writes, ${run.requests} requests, RSS ${run.peakRssMiB} MiB`,
      );
      await bench.admin.delete(AppServices, { namespace: BENCH_NAMESPACE, name: probe });
    }
    return {
      system: o.system,
      crs: o.crs,
      pods: o.pods,
      convergeSeconds: round(convergeSeconds, 1),
      idle,
      restarts,
    };
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await bench.stop();
  }
}

/**
 * Waits until the system has made no request (watches and Lease renewals aside) for `forMs`, at most 5 minutes; its
 * events since `from`.
 */
async function quiet(log: string, from: number, forMs: number): Promise<AuditEvent[]> {
  let seen = -1;
  const t0 = performance.now();
  let since = t0;
  for (;;) {
    if (performance.now() - t0 > 300_000) throw new Error('the system never went quiet for 5 minutes');
    const events = (await readAuditLog(log, { from, username: USER })).events.filter(
      (e) => e.verb !== 'watch' && e.objectRef?.resource !== 'leases',
    );
    if (events.length !== seen) {
      seen = events.length;
      since = performance.now();
    } else if (performance.now() - since >= forMs) {
      return (await readAuditLog(log, { from, username: USER })).events;
    }
    await sleep(1_000);
  }
}
