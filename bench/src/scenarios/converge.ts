/**
 * @module scenarios/converge
 * The AppService operator from zero: `crs` AppServices × `replicas` pods created at once (32 writers), until every
 * status reports its pods ready for the current generation. Measured from outside the operator: wall time and
 * per-AppService latency (create → converged status observed by a watching client), the operator's API requests per
 * AppService by verb (from the apiserver audit log, filtered by its ServiceAccount), its peak RSS and CPU seconds
 * (/proc), then its writes during `idleSeconds` of idleness (must be 0).
 */
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { AppServices, installApiAndRbac, NAME, NAMESPACE } from '@opkit/appservice';
import { Cache, Client, loadConfig, Namespaces } from '@opkit/runtime';
import { start } from '@opkit/testenv';
import { auditEvents, auditOffset, countByVerb, WRITE_VERBS } from '../audit.ts';
import { cpuSeconds, rssBytes } from '../proc.ts';
import { round, summarize } from '../stats.ts';

/** The operator's entry point, beside the package's index. */
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/appservice')));
const USER = `system:serviceaccount:${NAMESPACE}:${NAME}`;

export interface ConvergeResult {
  readonly crs: number;
  readonly replicas: number;
  readonly workers: number;
  readonly seconds: number;
  readonly latencyP50Seconds: number;
  readonly latencyP99Seconds: number;
  readonly requestsPerCR: number;
  readonly requestsPerCRByVerb: Record<string, number>;
  readonly peakRssMiB: number;
  readonly cpuSeconds: number;
  readonly idleSeconds: number;
  readonly idleWrites: number;
}

export async function convergeScenario(options: {
  crs: number;
  replicas: number;
  workers: number;
  idleSeconds: number;
  log: (line: string) => void;
}): Promise<ConvergeResult> {
  const { crs, replicas, log } = options;
  const pods = crs * replicas;
  const nodes = 3;
  const env = await start({ nodes, podsPerNode: Math.ceil(pods / nodes) + 100, auditLog: true, log: () => {} });
  const audit = env.auditLogPath as string;
  try {
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'bench-writer' });
    await installApiAndRbac(admin);
    await admin.create(Namespaces, { metadata: { name: 'bench' } });
    const sa = await env.kubeconfigFor({ namespace: NAMESPACE, name: NAME });
    const operator = spawn(
      process.execPath,
      [
        MAIN,
        '--kubeconfig',
        sa.path,
        '--metrics-bind-address',
        '0',
        '--health-probe-bind-address',
        '0',
        '--max-concurrent-reconciles',
        String(options.workers),
        '--log-level',
        'warn',
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const pid = operator.pid as number;
    let peakRss = 0;
    const sampler = setInterval(async () => {
      peakRss = Math.max(peakRss, await rssBytes(pid));
    }, 200);
    // An observer, as a user would watch: when does each AppService report converged?
    const observer = new Cache({ client: admin, namespace: 'bench' });
    const ctl = new AbortController();
    observer.start(ctl.signal);
    const inf = observer.informer(AppServices);
    await inf.waitForSync();
    const createdAt = new Map<string, number>();
    const convergedAt = new Map<string, number>();
    const check = (a: (typeof inf.store extends { get(k: string): infer T } ? T : never) | undefined) => {
      if (!a) return;
      const name = a.metadata.name as string;
      if (convergedAt.has(name) || !createdAt.has(name)) return;
      const s = a.status;
      if (s?.observedGeneration === a.metadata.generation && s?.readyReplicas === replicas && s.replicas === replicas) {
        convergedAt.set(name, performance.now());
      }
    };
    inf.addEventHandler({ add: check, update: (_o, a) => check(a) });
    await sleep(1_000); // the operator is up and synced
    const cpu0 = await cpuSeconds(pid);
    const offset0 = await auditOffset(audit);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < crs) {
          const i = next++;
          const name = `app-${i}`;
          createdAt.set(name, performance.now());
          await admin.create(AppServices, {
            metadata: { name, namespace: 'bench' },
            spec: { replicas, image: 'busybox' },
          } as never);
        }
      }),
    );
    log(`created ${crs} AppServices in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    while (convergedAt.size < crs) {
      await sleep(250);
      if (operator.exitCode !== null) throw new Error(`the operator exited (${operator.exitCode})`);
      if (performance.now() - t0 > 30 * 60_000)
        throw new Error(`not converged after 30 minutes (${convergedAt.size}/${crs})`);
    }
    const seconds = (performance.now() - t0) / 1000;
    await sleep(500);
    const offset1 = await auditOffset(audit);
    const cpu = (await cpuSeconds(pid)) - cpu0;
    log(`converged in ${seconds.toFixed(1)} s; idle for ${options.idleSeconds} s`);
    await sleep(options.idleSeconds * 1000);
    const idle = await auditEvents(audit, offset1, undefined, USER);
    const idleWrites = idle.filter((e) => WRITE_VERBS.has(e.verb) && e.objectRef?.resource !== 'leases').length;
    const busy = await auditEvents(audit, offset0, offset1, USER);
    clearInterval(sampler);
    ctl.abort();
    operator.kill('SIGTERM');
    await new Promise((r) => operator.once('exit', r));
    admin.close();
    const latencies = [...convergedAt]
      .map(([name, at]) => (at - (createdAt.get(name) ?? at)) / 1000)
      .sort((a, b) => a - b);
    const byVerb = countByVerb(busy);
    const perCR: Record<string, number> = {};
    for (const [verb, n] of Object.entries(byVerb)) perCR[verb] = round(n / crs, 2);
    return {
      crs,
      replicas,
      workers: options.workers,
      seconds: round(seconds, 2),
      latencyP50Seconds: round(summarize(latencies).median, 2),
      latencyP99Seconds: round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0, 2),
      requestsPerCR: round(busy.length / crs, 2),
      requestsPerCRByVerb: perCR,
      peakRssMiB: round(peakRss / 2 ** 20, 1),
      cpuSeconds: round(cpu, 2),
      idleSeconds: options.idleSeconds,
      idleWrites,
    };
  } finally {
    await env.stop();
  }
}
