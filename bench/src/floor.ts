/**
 * @module floor
 * The floor: the minimum writes a job needs, at full concurrency (64 requests in flight), with no reads beyond one
 * pod watch — the physical limit of the apiserver on this machine. For an AppService added, its pods are created at
 * once and its status written once they are all ready; for a replica change, the missing pods are created or the
 * surplus deleted, then the status written once.
 */
import { type AppService, AppServices } from '@opkit/appservice';
import { Cache } from '@opkit/runtime/cache';
import type { Client } from '@opkit/runtime/client';
import { type Pod, Pods } from '@opkit/runtime/kinds';
import { BENCH_NAMESPACE } from './harness.ts';

export interface Floor {
  /** Resolves once the pod watch has listed. */
  synced(): Promise<void>;
  /** A new AppService: its pods, then its status once they are ready. */
  add(app: AppService): void;
  /** `app` now wants `replicas` pods (its spec changed to generation `app.metadata.generation`). */
  scale(app: AppService, replicas: number): void;
}

export function floorWriter(client: Client, signal: AbortSignal): Floor {
  const cache = new Cache({ client, namespace: BENCH_NAMESPACE });
  cache.start(signal);
  const podInf = cache.informer(Pods);
  const waiting = new Map<string, { app: AppService; replicas: number }>();
  const queue: (() => Promise<void>)[] = [];
  let inFlight = 0;
  const pump = () => {
    while (inFlight < 64 && queue.length > 0) {
      const job = queue.shift() as () => Promise<void>;
      inFlight += 1;
      void job().finally(() => {
        inFlight -= 1;
        pump();
      });
    }
  };
  /** Queues a request; resolves when it is done (its failure is the benchmark's to see in the figures). */
  const run = (request: () => Promise<unknown>) =>
    new Promise<void>((resolve) => {
      queue.push(() =>
        request().then(
          () => resolve(),
          () => resolve(),
        ),
      );
      pump();
    });
  const live = (uid: string) => podInf.store.byIndex('controller', uid).filter((p) => !p.metadata.deletionTimestamp);
  const writeStatus = (app: AppService, replicas: number) =>
    run(() =>
      client.patchStatus(
        AppServices,
        { namespace: BENCH_NAMESPACE, name: app.metadata.name ?? '' },
        {
          status: {
            replicas,
            readyReplicas: replicas,
            updatedReplicas: replicas,
            podNames: live(app.metadata.uid as string)
              .map((p) => p.metadata.name ?? '')
              .sort(),
            observedGeneration: app.metadata.generation ?? 1,
          },
        },
      ),
    );
  const createPod = (app: AppService) =>
    run(() =>
      client.create(Pods, {
        metadata: {
          generateName: `${app.metadata.name}-`,
          namespace: BENCH_NAMESPACE,
          ownerReferences: [
            {
              apiVersion: AppServices.apiVersion,
              kind: 'AppService',
              name: app.metadata.name ?? '',
              uid: app.metadata.uid ?? '',
              controller: true,
            },
          ],
        },
        spec: { containers: [{ name: 'app', image: 'busybox' }] },
      }),
    );
  const maybeReady = (pod: Pod) => {
    const uid = pod.metadata.ownerReferences?.[0]?.uid ?? '';
    const w = waiting.get(uid);
    if (!w) return;
    const ready = live(uid).filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    if (ready.length < w.replicas) return;
    waiting.delete(uid);
    void writeStatus(w.app, w.replicas);
  };
  podInf.addEventHandler({ add: maybeReady, update: (_o, p) => maybeReady(p) });
  return {
    async synced() {
      await podInf.waitForSync();
    },
    add(app) {
      const replicas = app.spec?.replicas ?? 1;
      waiting.set(app.metadata.uid as string, { app, replicas });
      for (let i = 0; i < replicas; i++) void createPod(app);
    },
    scale(app, replicas) {
      const mine = live(app.metadata.uid as string);
      const jobs: Promise<void>[] = [];
      for (let i = mine.length; i < replicas; i++) jobs.push(createPod(app));
      for (const pod of mine.slice(replicas))
        jobs.push(run(() => client.delete(Pods, { namespace: BENCH_NAMESPACE, name: pod.metadata.name ?? '' })));
      void Promise.all(jobs).then(() => writeStatus(app, replicas));
    },
  };
}
