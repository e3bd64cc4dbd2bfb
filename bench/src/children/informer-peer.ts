/**
 * The peer: @kubernetes/client-node's informer, as TypeScript operators use it today, measured exactly like ours.
 * Args: <kubeconfig> <namespace> <expected objects>.
 */
import { CoreV1Api, KubeConfig, makeInformer, type V1Pod } from '@kubernetes/client-node';
import { ChurnMeter, report, settledHeap } from './protocol.ts';

const [kubeconfig, namespace, expectedArg] = process.argv.slice(2) as [string, string, string];
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const api = kc.makeApiClient(CoreV1Api);
const informer = makeInformer<V1Pod>(kc, `/api/v1/namespaces/${namespace}/pods`, () =>
  api.listNamespacedPod({ namespace }),
);
const meter = new ChurnMeter();
informer.on('update', meter.onUpdate);
// The documented client-node pattern: the informer stops on any error other than 410, so restart it.
let errors = 0;
informer.on('error', (err: unknown) => {
  errors += 1;
  process.stderr.write(`informer error: ${String((err as Error)?.message ?? err)}\n`);
  setTimeout(() => void informer.start(), 1_000);
});
const heap0 = settledHeap();
const t0 = performance.now();
await informer.start();
const syncSeconds = (performance.now() - t0) / 1000;
const objects = informer.list(namespace).length;
const heap1 = settledHeap();
report({
  phase: 'synced',
  objects,
  expected: Number(expectedArg),
  syncSeconds,
  heapBytesPerObject: (heap1 - heap0) / objects,
  rssBytes: process.memoryUsage().rss,
});
await meter.measure({ errors });
await informer.stop();
process.exit(0);
