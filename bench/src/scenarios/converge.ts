/**
 * @module scenarios/converge
 * One system converging AppServices from zero on a fresh control plane: `crs` AppServices × `replicas` pods created
 * at once (32 writers), until every status reports its pods ready for the current generation. Measured from outside
 * the system: wall time and per-AppService latency (create → converged status seen by a watching client), its API
 * requests per AppService by verb (apiserver audit log, filtered by its ServiceAccount), its peak RSS and CPU seconds
 * (/proc; not for the in-process floor), then its writes during `idleSeconds` of idleness (must be 0).
 * The floor performs the minimum writes the job needs — the pods, then one status write per AppService once its pods
 * are ready — at full concurrency (64 in flight), as the same ServiceAccount.
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, loadConfig } from '@opkit/runtime/client';
import { auditLogSize, readAuditLog, WRITE_VERBS } from '@opkit/testenv';
import { serverMsByRequest } from '../audit.ts';
import { floorWriter } from '../floor.ts';
import {
  apiserverCpuSince,
  apiserverProfile,
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
import { type PeerName, startPeer } from '../peers.ts';
import { cpuSeconds } from '../proc.ts';
import { round, summarize } from '../stats.ts';

export type SystemName = PeerName | 'floor';

export interface ConvergeResult {
  readonly system: SystemName;
  readonly crs: number;
  readonly replicas: number;
  readonly workers: number;
  readonly seconds: number;
  readonly latencyP50Seconds: number;
  readonly latencyP99Seconds: number;
  readonly requestsPerCR: number;
  readonly requestsPerCRByVerb: Record<string, number>;
  /** The apiserver's time per request by verb and resource (audit log): which request is slow. */
  readonly serverMsByRequest: Record<string, { readonly p50: number; readonly p99: number }>;
  readonly peakRssMiB: number | null;
  readonly cpuSeconds: number | null;
  /** kube-apiserver's CPU seconds (/proc) from the first create until every AppService converged. */
  readonly apiserverCpuSeconds: number | null;
  /** The same, in milliseconds per converged AppService: what the system costs the apiserver. */
  readonly apiserverCpuMsPerCR: number | null;
  readonly idleSeconds: number;
  readonly idleWrites: number;
}

export interface ConvergeOptions {
  readonly system: SystemName;
  readonly crs: number;
  readonly replicas: number;
  readonly workers: number;
  readonly idleSeconds: number;
  readonly goBinary?: string;
  readonly log: (line: string) => void;
}

export async function convergeScenario(o: ConvergeOptions): Promise<ConvergeResult> {
  const bench = await benchEnv(o.crs * o.replicas);
  let proc: ChildProcess | undefined;
  const ctl = new AbortController();
  try {
    if (o.system !== 'floor') proc = await startPeer(o.system, bench.kubeconfig, o.workers, o.goBinary);
    const pid = proc?.pid;
    const rss = sampleRss(pid);
    const observed = await watchAppServices(bench.admin, ctl.signal);
    const createdAt = new Map<string, number>();
    const convergedAt = new Map<string, number>();
    observed.addEventHandler({
      update: (_old, a) => {
        const name = a.metadata.name as string;
        if (createdAt.has(name) && !convergedAt.has(name) && reports(a, o.replicas, true))
          convergedAt.set(name, performance.now());
      },
    });
    const floor =
      o.system === 'floor'
        ? floorWriter(new Client(await loadConfig({ path: bench.kubeconfig })), ctl.signal)
        : undefined;
    await floor?.synced();
    await sleep(2_000); // the system is up and synced
    const cpu0 = pid ? await cpuSeconds(pid) : 0;
    const apiserverCpuNow = await apiserverCpuSince(bench);
    const offset0 = await auditLogSize(bench.auditLog);
    const t0 = performance.now();
    const profile = apiserverProfile(bench, o.system, 15, o.log);
    await createAppServices(
      bench.admin,
      o.crs,
      () => o.replicas,
      (app, at) => {
        createdAt.set(app.metadata.name as string, at);
        floor?.add(app);
      },
    );
    o.log(`${o.system}: created ${o.crs} AppServices in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    await waitUntil(`${o.system} converging`, () => convergedAt.size >= o.crs, 20 * 60_000, proc);
    const seconds = (performance.now() - t0) / 1000;
    const apiserverCpu = await apiserverCpuNow();
    await profile;
    // with BENCH_HOPS, the operator's hop recorder writes its file for the start and the converge
    if (o.system === 'opkit' && pid && process.env.BENCH_HOPS) process.kill(pid, 'SIGUSR2');
    await sleep(500);
    const offset1 = await auditLogSize(bench.auditLog);
    const cpu = pid ? (await cpuSeconds(pid)) - cpu0 : null;
    await sleep(o.idleSeconds * 1000);
    const idle = (await readAuditLog(bench.auditLog, { from: offset1, username: USER })).events;
    const idleWrites = idle.filter((e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases').length;
    const busy = (await readAuditLog(bench.auditLog, { from: offset0, to: offset1, username: USER })).events;
    const byRequest = serverMsByRequest(busy);
    o.log(
      `${o.system}: converged in ${seconds.toFixed(1)} s, apiserver CPU ${apiserverCpu?.toFixed(2)} s; apiserver time per request p50/p99 (ms): ${Object.entries(
        byRequest,
      )
        .map(([k, v]) => `${k} ${v.p50}/${v.p99}`)
        .join(', ')}`,
    );
    rss.stop();
    const latencies = [...convergedAt]
      .map(([name, at]) => (at - (createdAt.get(name) ?? at)) / 1000)
      .sort((a, b) => a - b);
    const perCR: Record<string, number> = {};
    for (const e of busy) perCR[e.verb] = (perCR[e.verb] ?? 0) + 1;
    for (const verb of Object.keys(perCR)) perCR[verb] = round((perCR[verb] as number) / o.crs, 2);
    return {
      system: o.system,
      crs: o.crs,
      replicas: o.replicas,
      workers: o.workers,
      seconds: round(seconds, 2),
      latencyP50Seconds: round(summarize(latencies).median, 2),
      latencyP99Seconds: round(quantile(latencies, 0.99), 2),
      requestsPerCR: round(busy.length / o.crs, 2),
      requestsPerCRByVerb: perCR,
      serverMsByRequest: byRequest,
      peakRssMiB: pid ? round(rss.peak() / 2 ** 20, 1) : null,
      cpuSeconds: cpu === null ? null : round(cpu, 2),
      apiserverCpuSeconds: apiserverCpu === null ? null : round(apiserverCpu, 2),
      apiserverCpuMsPerCR: apiserverCpu === null ? null : round((apiserverCpu * 1000) / o.crs, 2),
      idleSeconds: o.idleSeconds,
      idleWrites,
    };
  } finally {
    ctl.abort();
    await stopProcess(proc);
    await bench.stop();
  }
}
