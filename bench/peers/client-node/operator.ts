/**
 * The AppService operator as a TypeScript developer writes it today with @kubernetes/client-node: its informers
 * (makeInformer) for AppServices and pods, and a straightforward reconcile on every event — at most `workers` at once,
 * one at a time per AppService (a re-run if it changed meanwhile), a retry after a second on error, the informer
 * restarted on error as client-node's docs advise. No work queue, no backoff, no expectations. Same behaviour as the
 * other peers: generateName pods with the same labels and a controller owner reference, status written when changed,
 * one Event per scaling action. Args: --kubeconfig FILE --max-concurrent-reconciles N
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesObject,
  makeInformer,
  type V1Pod,
} from '@kubernetes/client-node';

interface AppService extends KubernetesObject {
  spec?: { replicas?: number; image?: string; command?: string[] };
  status?: Record<string, unknown>;
}

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const kc = new KubeConfig();
kc.loadFromFile(arg('--kubeconfig', `${process.env.HOME}/.kube/config`));
const workers = Number(arg('--max-concurrent-reconciles', '1'));
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const G = { group: 'app.example.com', version: 'v1alpha1', plural: 'appservices' };
const MANAGED = 'app.kubernetes.io/managed-by=appservice-operator';

const apps = makeInformer<AppService>(
  kc,
  '/apis/app.example.com/v1alpha1/appservices',
  () => custom.listClusterCustomObject(G) as never,
);
const pods = makeInformer<V1Pod>(
  kc,
  '/api/v1/pods',
  () => core.listPodForAllNamespaces({ labelSelector: MANAGED }),
  MANAGED,
);

const running = new Set<string>();
const again = new Set<string>();
const waiting: string[] = [];
let active = 0;

function schedule(key: string): void {
  if (running.has(key)) {
    again.add(key);
    return;
  }
  if (!waiting.includes(key)) waiting.push(key);
  pump();
}

function pump(): void {
  while (active < workers && waiting.length > 0) {
    const key = waiting.shift() as string;
    if (running.has(key)) {
      again.add(key);
      continue;
    }
    running.add(key);
    active += 1;
    reconcile(key)
      .catch((err: unknown) => {
        process.stderr.write(`reconcile ${key}: ${(err as Error).message}\n`);
        setTimeout(() => schedule(key), 1_000);
      })
      .finally(() => {
        running.delete(key);
        active -= 1;
        if (again.delete(key)) schedule(key);
        pump();
      });
  }
}

const isActive = (p: V1Pod) =>
  !p.metadata?.deletionTimestamp && ['Pending', 'Running', 'Unknown', undefined].includes(p.status?.phase);
const isReady = (p: V1Pod) =>
  p.status?.phase === 'Running' && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

async function reconcile(key: string): Promise<void> {
  const [namespace, name] = key.split('/') as [string, string];
  const app = apps.get(name, namespace);
  if (!app || app.metadata?.deletionTimestamp) return;
  const uid = app.metadata?.uid;
  const owned = pods
    .list(namespace)
    .filter((p) => p.metadata?.ownerReferences?.some((o) => o.controller && o.uid === uid));
  const live: V1Pod[] = [];
  for (const p of owned) {
    if (p.metadata?.deletionTimestamp) continue;
    if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') {
      await core.deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '' });
      continue;
    }
    if (isActive(p)) live.push(p);
  }
  const desired = app.spec?.replicas ?? 1;
  const labels = {
    'app.kubernetes.io/name': 'appservice',
    'app.kubernetes.io/instance': name,
    'app.kubernetes.io/managed-by': 'appservice-operator',
  };
  let created = 0;
  while (live.length < desired) {
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: {
          generateName: `${name}-`,
          labels,
          ownerReferences: [
            {
              apiVersion: 'app.example.com/v1alpha1',
              kind: 'AppService',
              name,
              uid: uid ?? '',
              controller: true,
              blockOwnerDeletion: true,
            },
          ],
        },
        spec: {
          containers: [
            {
              name: 'app',
              image: app.spec?.image ?? 'busybox',
              ...(app.spec?.command ? { command: app.spec.command } : {}),
            },
          ],
          restartPolicy: 'Always',
        },
      },
    });
    live.push(pod);
    created += 1;
  }
  let deleted = 0;
  for (const p of live.splice(desired)) {
    await core.deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '' });
    deleted += 1;
  }
  if (created > 0 || deleted > 0) {
    const now = new Date();
    await core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { generateName: `${name}.` },
        involvedObject: { apiVersion: 'app.example.com/v1alpha1', kind: 'AppService', name, namespace, uid: uid ?? '' },
        reason: created > 0 ? 'ScalingUp' : 'ScalingDown',
        message: `${created > 0 ? `created ${created}` : `deleted ${deleted}`} pods (want ${desired})`,
        type: 'Normal',
        source: { component: 'appservice-operator' },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  }
  const status = {
    replicas: live.length,
    readyReplicas: live.filter(isReady).length,
    updatedReplicas: live.length,
    podNames: live.map((p) => p.metadata?.name ?? '').sort(),
    selector: Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    observedGeneration: app.metadata?.generation ?? 0,
  };
  if (JSON.stringify(app.status ?? {}) === JSON.stringify({ ...app.status, ...status })) return;
  await custom.replaceNamespacedCustomObjectStatus({
    ...G,
    namespace,
    name,
    body: { ...app, status: { ...app.status, ...status } },
  });
}

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace}/${o.metadata?.name}`;
apps.on('add', (a) => schedule(keyOf(a)));
apps.on('update', (a) => schedule(keyOf(a)));
const owner = (p: V1Pod) => {
  const ref = p.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'AppService');
  if (ref) schedule(`${p.metadata?.namespace}/${ref.name}`);
};
pods.on('add', owner);
pods.on('update', owner);
pods.on('delete', owner);
for (const inf of [apps, pods]) {
  inf.on('error', (err: unknown) => {
    process.stderr.write(`informer error: ${String(err)}\n`);
    setTimeout(() => void inf.start(), 1_000);
  });
}
await pods.start();
await apps.start();
process.on('SIGTERM', () => process.exit(0));
