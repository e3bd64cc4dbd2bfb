/**
 * opkit's informer (default cache settings: managedFields dropped), measured from inside: time to sync, heap per
 * cached object (and what `opkit_cache_bytes` estimates per object), CPU per watch event. Args: <kubeconfig> <namespace> <expected objects> [keep-managed-fields].
 */
import { Cache } from '@opkit/runtime/cache';
import { Client, loadConfig } from '@opkit/runtime/client';
import { Pods } from '@opkit/runtime/kinds';
import { Metrics } from '@opkit/runtime/metrics';
import { ChurnMeter, report, settledHeap } from './protocol.ts';

const [kubeconfig, namespace, expectedArg, mode] = process.argv.slice(2) as [string, string, string, string?];
const expected = Number(expectedArg);
const client = new Client(await loadConfig({ path: kubeconfig }), { name: 'bench' });
const metrics = new Metrics({ processMetrics: false });
const cache = new Cache({ client, namespace, dropManagedFields: mode !== 'keep-managed-fields', metrics });
const informer = cache.informer(Pods);
const meter = new ChurnMeter();
informer.addEventHandler({ update: meter.onUpdate });
const heap0 = settledHeap();
const ctl = new AbortController();
const t0 = performance.now();
cache.start(ctl.signal);
await cache.waitForSync();
const syncSeconds = (performance.now() - t0) / 1000;
const objects = informer.store.size;
const heap1 = settledHeap();
// what opkit_cache_bytes reports for these pods, to weigh it against the heap they take
const estimate = /^opkit_cache_bytes\{resource="pods"\} (\d+)$/m.exec(metrics.registry.metrics())?.[1];
report({
  phase: 'synced',
  objects,
  expected,
  syncSeconds,
  heapBytesPerObject: (heap1 - heap0) / objects,
  estimatedBytesPerObject: Number(estimate) / objects,
  rssBytes: process.memoryUsage().rss,
});
await meter.measure();
ctl.abort();
client.close();
process.exit(0);
