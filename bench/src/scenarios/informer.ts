/**
 * @module scenarios/informer
 * opkit's informer against @kubernetes/client-node's, on the same objects in the same run: N pods (bound to a kwok
 * node, so they are real Running pods with status and managedFields) in one namespace. Each informer runs in its own
 * child process, alternating order, and reports its time to sync, heap bytes per cached object (after a forced GC;
 * for ours also what the `opkit_cache_bytes` metric estimates, and the heap per estimated byte), and CPU per watch event while the parent patches 2,000 pods (or all, if fewer). Also the in-process throughput of the work queue.
 * Goal: ours ≤ 1.0× the peer on sync time and on heap per object.
 */
import { Cache } from '@opkit/runtime/cache';
import { Client, loadConfig } from '@opkit/runtime/client';
import { Namespaces, Pods } from '@opkit/runtime/kinds';
import { WorkQueue } from '@opkit/runtime/workqueue';
import { type Environment, start } from '@opkit/testenv';
import { Child } from '../children/run.ts';
import { round, type Summary, summarize } from '../stats.ts';

interface Synced {
  objects: number;
  syncSeconds: number;
  heapBytesPerObject: number;
  /** What opkit's `opkit_cache_bytes` estimates per object (ours only). */
  estimatedBytesPerObject?: number;
  rssBytes: number;
}
interface Churned {
  events: number;
  /** Watch events the informer never delivered (it lost them). */
  missed: number;
  eventsPerSecond: number;
  cpuMicrosPerEvent: number;
}
type Run = Synced & Churned;

export interface InformerResult {
  readonly objects: number;
  readonly syncSeconds: number;
  readonly heapBytesPerObject: number;
  readonly eventsPerSecond: number;
  readonly cpuMicrosPerEvent: number;
  readonly peer: {
    syncSeconds: number;
    heapBytesPerObject: number;
    eventsPerSecond: number;
    cpuMicrosPerEvent: number;
  };
  /** Ours with managedFields kept, i.e. the same objects as the peer stores. */
  readonly oursKeepingManagedFields: { syncSeconds: number; heapBytesPerObject: number };
  /**
   * What `opkit_cache_bytes` estimates per cached object (their JSON size), and the heap they take per estimated
   * byte: how to read the metric against the heap.
   */
  readonly cacheBytesMetric: { estimatedBytesPerObject: number; heapPerEstimatedByte: number };
  readonly ratios: { syncSeconds: number; heapBytesPerObject: number; cpuMicrosPerEvent: number };
  readonly queueOpsPerSecond: number;
  /** Update events not delivered, summed over the runs (a correct informer misses none). */
  readonly missedEvents: { ours: number; peer: number };
  readonly spread: Record<string, Summary>;
  readonly repetitions: number;
}

const NS = 'bench-informer';
const CHURN = 2_000;

export async function informerScenario(options: {
  objects: number;
  repeat: number;
  log: (line: string) => void;
}): Promise<InformerResult> {
  const { objects, log } = options;
  const env = await start({ nodes: 1, podsPerNode: objects + 100, log: () => {} });
  try {
    const client = new Client(await loadConfig({ path: env.kubeconfigPath }), { name: 'bench-writer' });
    await seed(env, client, objects, log);
    const runs: Record<'ours' | 'peer' | 'keep', Run[]> = { ours: [], peer: [], keep: [] };
    let pass = 0;
    for (let i = 0; i < options.repeat; i++) {
      const order: ('ours' | 'peer' | 'keep')[] = i % 2 === 0 ? ['ours', 'peer', 'keep'] : ['peer', 'keep', 'ours'];
      for (const who of order) {
        pass += 1;
        const script = who === 'peer' ? 'informer-peer.ts' : 'informer-ours.ts';
        const args = [env.kubeconfigPath, NS, String(objects), ...(who === 'keep' ? ['keep-managed-fields'] : [])];
        const child = new Child(script, args);
        const synced = await child.next<Synced>();
        if (synced.objects !== objects) throw new Error(`${who} cached ${synced.objects} objects, expected ${objects}`);
        child.send(`churn ${Math.min(CHURN, objects)}`);
        await churn(client, pass, Math.min(CHURN, objects));
        child.send('end');
        const churned = await child.next<Churned>();
        await child.exit();
        runs[who].push({ ...synced, ...churned });
        log(
          `${who.padEnd(4)} run ${i + 1}: sync ${synced.syncSeconds.toFixed(2)} s, ${Math.round(synced.heapBytesPerObject)} B/object` +
            `${synced.estimatedBytesPerObject ? ` (opkit_cache_bytes: ${Math.round(synced.estimatedBytesPerObject)} B/object)` : ''}, ` +
            `${churned.cpuMicrosPerEvent.toFixed(0)} µs CPU/event${churned.missed > 0 ? `, MISSED ${churned.missed} events` : ''}`,
        );
      }
    }
    const med = (who: keyof typeof runs, f: Exclude<keyof Run, 'estimatedBytesPerObject'>) =>
      summarize(runs[who].map((r) => r[f]));
    const queueOpsPerSecond = await measureQueue();
    log(`work queue: ${Math.round(queueOpsPerSecond)} add+get+done per second`);
    const estimate = summarize(runs.ours.map((r) => r.estimatedBytesPerObject ?? Number.NaN));
    const ours = {
      sync: med('ours', 'syncSeconds'),
      heap: med('ours', 'heapBytesPerObject'),
      cpu: med('ours', 'cpuMicrosPerEvent'),
      eps: med('ours', 'eventsPerSecond'),
    };
    const peer = {
      sync: med('peer', 'syncSeconds'),
      heap: med('peer', 'heapBytesPerObject'),
      cpu: med('peer', 'cpuMicrosPerEvent'),
      eps: med('peer', 'eventsPerSecond'),
    };
    client.close();
    return {
      objects,
      syncSeconds: round(ours.sync.median, 3),
      heapBytesPerObject: Math.round(ours.heap.median),
      eventsPerSecond: Math.round(ours.eps.median),
      cpuMicrosPerEvent: round(ours.cpu.median, 1),
      peer: {
        syncSeconds: round(peer.sync.median, 3),
        heapBytesPerObject: Math.round(peer.heap.median),
        eventsPerSecond: Math.round(peer.eps.median),
        cpuMicrosPerEvent: round(peer.cpu.median, 1),
      },
      oursKeepingManagedFields: {
        syncSeconds: round(med('keep', 'syncSeconds').median, 3),
        heapBytesPerObject: Math.round(med('keep', 'heapBytesPerObject').median),
      },
      cacheBytesMetric: {
        estimatedBytesPerObject: Math.round(estimate.median),
        heapPerEstimatedByte: round(ours.heap.median / estimate.median, 2),
      },
      ratios: {
        syncSeconds: round(ours.sync.median / peer.sync.median, 2),
        heapBytesPerObject: round(ours.heap.median / peer.heap.median, 2),
        cpuMicrosPerEvent: round(ours.cpu.median / peer.cpu.median, 2),
      },
      queueOpsPerSecond: Math.round(queueOpsPerSecond),
      missedEvents: {
        ours: [...runs.ours, ...runs.keep].reduce((a, r) => a + r.missed, 0),
        peer: runs.peer.reduce((a, r) => a + r.missed, 0),
      },
      spread: {
        oursSyncSeconds: ours.sync,
        peerSyncSeconds: peer.sync,
        oursHeapBytesPerObject: ours.heap,
        peerHeapBytesPerObject: peer.heap,
      },
      repetitions: options.repeat,
    };
  } finally {
    await env.stop();
  }
}

/** Creates the pods (bound to the kwok node) and waits until kwok reports every one Running. */
async function seed(env: Environment, client: Client, n: number, log: (line: string) => void): Promise<void> {
  await client.create(Namespaces, { metadata: { name: NS } });
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      await client.create(Pods, {
        metadata: {
          name: `pod-${i}`,
          namespace: NS,
          labels: { 'app.kubernetes.io/name': 'bench', 'app.kubernetes.io/instance': `inst-${i % 100}`, tier: 'web' },
        },
        spec: {
          nodeName: 'kwok-node-0',
          containers: [
            {
              name: 'main',
              image: 'busybox:1.36',
              command: ['sh', '-c', 'sleep 3600'],
              env: [
                { name: 'INDEX', value: String(i) },
                { name: 'MODE', value: 'bench' },
              ],
              resources: { requests: { cpu: '10m', memory: '16Mi' } },
            },
          ],
        },
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  log(`created ${n} pods in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  const watcher = new Cache({ client, namespace: NS });
  const ctl = new AbortController();
  watcher.start(ctl.signal);
  const inf = watcher.informer(Pods);
  await inf.waitForSync();
  for (;;) {
    const running = inf.store.list().filter((p) => p.status?.phase === 'Running').length;
    if (running === n) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  ctl.abort();
  log(`all ${n} pods Running after ${((performance.now() - t0) / 1000).toFixed(1)} s (${env.server})`);
}

/** Patches `count` pods (a label change each), 16 at a time. */
async function churn(client: Client, pass: number, count: number): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      await client.patch(Pods, { namespace: NS, name: `pod-${i}` }, { metadata: { labels: { round: String(pass) } } });
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
}

/** add + get + done cycles per second over 1,000 distinct keys, in this process. */
async function measureQueue(): Promise<number> {
  const q = new WorkQueue<string>({ name: 'bench' });
  const keys = Array.from({ length: 1_000 }, (_, i) => `ns/key-${i}`);
  const n = 300_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    q.add(keys[i % keys.length] as string);
    const k = await q.get();
    if (k !== undefined) q.done(k);
  }
  const perSecond = n / ((performance.now() - t0) / 1000);
  q.shutDown();
  return perSecond;
}
