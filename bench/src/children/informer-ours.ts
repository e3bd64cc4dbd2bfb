/**
 * opkit's informer (default cache settings: managedFields dropped), measured from inside: time to sync, heap per
 * cached object, CPU per watch event. Args: <kubeconfig> <namespace> <expected objects> [keep-managed-fields].
 */
import { Cache, Client, loadConfig, Pods } from '@opkit/runtime';
import { cpuSeconds, nextCommand, report, settledHeap, waitForEvents } from './protocol.ts';

const [kubeconfig, namespace, expectedArg, mode] = process.argv.slice(2) as [string, string, string, string?];
const expected = Number(expectedArg);
const client = new Client(await loadConfig({ path: kubeconfig }), { name: 'bench' });
const cache = new Cache({ client, namespace, dropManagedFields: mode !== 'keep-managed-fields' });
const informer = cache.informer(Pods);
let updates = 0;
let firstAt = 0;
let lastAt = 0;
let target = Number.POSITIVE_INFINITY;
let reached: () => void = () => {};
informer.addEventHandler({
  update: () => {
    updates += 1;
    if (updates === 1) firstAt = performance.now();
    lastAt = performance.now();
    if (updates >= target) reached();
  },
});
const heap0 = settledHeap();
const ctl = new AbortController();
const t0 = performance.now();
cache.start(ctl.signal);
await cache.waitForSync();
const syncSeconds = (performance.now() - t0) / 1000;
const objects = informer.store.size;
const heap1 = settledHeap();
report({
  phase: 'synced',
  objects,
  expected,
  syncSeconds,
  heapBytesPerObject: (heap1 - heap0) / objects,
  rssBytes: process.memoryUsage().rss,
});
const churn = Number((await nextCommand()).split(' ')[1]);
const cpu0 = cpuSeconds();
target = churn;
await waitForEvents(
  churn,
  () => updates,
  (r) => {
    reached = r;
  },
);
report({
  phase: 'churned',
  events: updates,
  missed: Math.max(0, churn - updates),
  eventsPerSecond: updates / ((lastAt - firstAt) / 1000),
  cpuMicrosPerEvent: ((cpuSeconds() - cpu0) * 1e6) / updates,
});
ctl.abort();
client.close();
process.exit(0);
