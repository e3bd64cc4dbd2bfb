/**
 * @module scenarios/churn
 * Latency against load, as a rate sweep: `crs` AppServices (1 pod each) converged and at rest, then for each rate in
 * `rates` (ascending) `rate` spec changes per second for `seconds` seconds — each flips one AppService between 1 and 2
 * replicas, visiting them in turn — and for each change the time until a watching client sees a status that reports
 * the new replica count for that generation (observedGeneration ≥ the change's). After each rate the sweep waits until
 * every change was observed (at most 30 s; the rest count as never observed). A rate is sustained when its p99 is
 * ≤ `SUSTAINED_P99_SECONDS` and every change was observed; the sweep stops after the first rate that is not (a
 * saturated system's backlog would only spill into the next rate). One system alone on a fresh control plane; the
 * floor does the pod creates or deletes and one status write per change.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AppService, AppServices } from '@opkit/appservice';
import { Client, loadConfig } from '@opkit/runtime/client';
import { auditLogSize, readAuditLog, WRITE_VERBS } from '@opkit/testenv';
import { requestKey, serverMs, serverMsByRequest } from '../audit.ts';
import { floorWriter } from '../floor.ts';
import {
  apiserverCpuSince,
  apiserverProfile,
  BENCH_NAMESPACE,
  benchEnv,
  createAppServices,
  quantile,
  reports,
  sampleRss,
  stopProcess,
  USER,
  waitUntil,
  watchAppServices,
} from '../harness.ts';
import { startPeer } from '../peers.ts';
import { cpuSeconds } from '../proc.ts';
import { round } from '../stats.ts';
import type { SystemName } from './converge.ts';

/** The p99 (seconds) at or under which a rate counts as sustained. */
export const SUSTAINED_P99_SECONDS = 1;

/** The figures of one rate of the sweep. */
export interface ChurnRate {
  readonly rate: number;
  readonly changes: number;
  /** Changes whose status was never observed within 30 s after this rate's churn ended. */
  readonly unobserved: number;
  readonly latencyP50Seconds: number;
  readonly latencyP99Seconds: number;
  readonly latencyMaxSeconds: number;
  readonly writesPerChange: number;
  readonly writesPerChangeByVerb: Record<string, number>;
  /** The apiserver's own time for the system's writes (audit log: received → response complete), ms. */
  readonly serverWriteMs: { readonly p50: number; readonly p99: number };
  /** The apiserver's time per write by verb and resource (audit log), to tell which write is slow. */
  readonly serverWriteMsByVerb: Record<string, { readonly p50: number; readonly p99: number }>;
  /**
   * kube-apiserver's CPU (/proc) from this rate's first change until every change was observed, in milliseconds per
   * change: what one change costs the apiserver (its watches and the control plane's own work included, the same
   * for every system).
   */
  readonly apiserverCpuMsPerChange: number | null;
  readonly sustained: boolean;
}

export interface ChurnResult {
  readonly system: SystemName;
  readonly crs: number;
  readonly seconds: number;
  /** One entry per rate run, ascending; rates above the first unsustained one are not run. */
  readonly rates: ChurnRate[];
  /** The highest rate sustained (0 when none was). */
  readonly sustainedRate: number;
  readonly peakRssMiB: number | null;
  readonly cpuSeconds: number | null;
}

export interface ChurnOptions {
  readonly system: SystemName;
  readonly crs: number;
  /** Changes per second, swept in ascending order. */
  readonly rates: readonly number[];
  /** Seconds of churn at each rate. */
  readonly seconds: number;
  readonly workers: number;
  readonly goBinary?: string;
  readonly log: (line: string) => void;
}

export async function churnScenario(o: ChurnOptions): Promise<ChurnResult> {
  const bench = await benchEnv(o.crs * 2);
  let proc: ChildProcess | undefined;
  const ctl = new AbortController();
  try {
    if (o.system !== 'floor') proc = await startPeer(o.system, bench.kubeconfig, o.workers, o.goBinary);
    const pid = proc?.pid;
    const observed = await watchAppServices(bench.admin, ctl.signal);
    const floor =
      o.system === 'floor'
        ? floorWriter(new Client(await loadConfig({ path: bench.kubeconfig })), ctl.signal)
        : undefined;
    await floor?.synced();
    const t0 = performance.now();
    await createAppServices(
      bench.admin,
      o.crs,
      () => 1,
      (app) => floor?.add(app),
    );
    const atRest = () => observed.store.list().filter((a) => reports(a, 1, true)).length >= o.crs;
    await waitUntil(`${o.system} converging ${o.crs} AppServices`, atRest, 10 * 60_000, proc);
    o.log(`${o.system}: ${o.crs} AppServices at rest after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await sleep(3_000);

    const pending = new Map<string, { generation: number; replicas: number; at: number }>();
    let latencies: number[] = [];
    const check = (app: AppService) => {
      const p = pending.get(app.metadata.name as string);
      const s = app.status;
      if (!p || (s?.observedGeneration ?? 0) < p.generation || s?.replicas !== p.replicas) return;
      pending.delete(app.metadata.name as string);
      latencies.push((performance.now() - p.at) / 1000);
    };
    observed.addEventHandler({ update: (_old, a) => check(a) });
    const rss = sampleRss(pid);
    const cpu0 = pid ? await cpuSeconds(pid) : 0;
    let cursor = 0;
    const rates: ChurnRate[] = [];
    // with BENCH_HOPS, the operator's hop recorder writes one file per period: converge, then each rate
    const hops = () => o.system === 'opkit' && pid && process.env.BENCH_HOPS && process.kill(pid, 'SIGUSR2');
    for (const rate of [...o.rates].sort((a, b) => a - b)) {
      hops();
      latencies = [];
      pending.clear();
      const offset0 = await auditLogSize(bench.auditLog);
      const total = rate * o.seconds;
      const apiserverCpuNow = await apiserverCpuSince(bench);
      // with BENCH_APISERVER_PROF, a CPU profile of kube-apiserver over this rate's churn
      const profile = apiserverProfile(bench, `${o.system}-churn-${rate}`, o.seconds, o.log);
      const start = performance.now();
      const inFlight: Promise<void>[] = [];
      for (let i = 0; i < total; i++) {
        const due = start + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        // every AppService has a change in flight: the system is saturated; the next change waits for a free one
        if (pending.size >= o.crs) {
          const free = await waitUntil('an AppService without a change in flight', () => pending.size < o.crs, 60_000)
            .then(() => true)
            .catch(() => false);
          if (!free) break; // stuck for a minute: the rest of this rate is not sent
        }
        let name = `app-${cursor++ % o.crs}`;
        while (pending.has(name)) name = `app-${cursor++ % o.crs}`;
        const current = observed.store.get(`${BENCH_NAMESPACE}/${name}`);
        const replicas = current?.spec?.replicas === 1 ? 2 : 1;
        const at = performance.now();
        pending.set(name, { generation: Number.POSITIVE_INFINITY, replicas, at });
        const change = bench.admin
          .patch(AppServices, { namespace: BENCH_NAMESPACE, name }, { spec: { replicas } })
          .then((app) => {
            pending.set(name, { generation: app.metadata.generation ?? 0, replicas, at });
            floor?.scale(app, replicas);
            check(observed.store.get(`${BENCH_NAMESPACE}/${name}`) ?? app);
          });
        inFlight.push(change);
      }
      await Promise.all(inFlight);
      await profile;
      const sent = (performance.now() - start) / 1000;
      await waitUntil('every change observed', () => pending.size === 0, 30_000).catch(() => {});
      const apiserverCpu = await apiserverCpuNow();
      const writes = (await readAuditLog(bench.auditLog, { from: offset0, username: USER })).events.filter(
        (e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases',
      );
      const byVerb: Record<string, number> = {};
      for (const e of writes) {
        const key = requestKey(e);
        byVerb[key] = (byVerb[key] ?? 0) + 1;
      }
      for (const k of Object.keys(byVerb)) byVerb[k] = round((byVerb[k] ?? 0) / total, 2);
      const ms = serverMs(writes);
      const serverWriteMsByVerb = serverMsByRequest(writes);
      latencies.sort((a, b) => a - b);
      const p99 = round(quantile(latencies, 0.99), 3);
      const point: ChurnRate = {
        rate,
        changes: total,
        unobserved: pending.size,
        latencyP50Seconds: round(quantile(latencies, 0.5), 3),
        latencyP99Seconds: p99,
        latencyMaxSeconds: round(latencies[latencies.length - 1] ?? 0, 3),
        writesPerChange: round(writes.length / total, 2),
        writesPerChangeByVerb: byVerb,
        serverWriteMs: { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) },
        serverWriteMsByVerb,
        apiserverCpuMsPerChange: apiserverCpu === null ? null : round((apiserverCpu * 1000) / total, 2),
        sustained: pending.size === 0 && p99 <= SUSTAINED_P99_SECONDS,
      };
      rates.push(point);
      o.log(
        `churn ${o.system} at ${rate}/s: ${total} changes sent in ${sent.toFixed(1)} s, p50 ${point.latencyP50Seconds} s, p99 ${p99} s, max ${point.latencyMaxSeconds} s, unobserved ${point.unobserved}, ${point.writesPerChange} writes/change, apiserver CPU ${point.apiserverCpuMsPerChange} ms/change, apiserver time per write p50 ${point.serverWriteMs.p50} ms p99 ${point.serverWriteMs.p99} ms (${Object.entries(
          serverWriteMsByVerb,
        )
          .map(([k, v]) => `${k} ${v.p50}/${v.p99}`)
          .join(', ')})`,
      );
      if (!point.sustained) break;
      await sleep(2_000);
    }
    hops();
    const cpu = pid ? (await cpuSeconds(pid)) - cpu0 : null;
    rss.stop();
    return {
      system: o.system,
      crs: o.crs,
      seconds: o.seconds,
      rates,
      sustainedRate: Math.max(0, ...rates.filter((r) => r.sustained).map((r) => r.rate)),
      peakRssMiB: pid ? round(rss.peak() / 2 ** 20, 1) : null,
      cpuSeconds: cpu === null ? null : round(cpu, 2),
    };
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await bench.stop();
  }
}
