/**
 * The AppService operator as a TypeScript developer writes it with kubernetes-fluent-client (Pepr's client), the way
 * its README and Pepr's operator examples show: `K8s(Kind).Watch(callback)` for AppServices and for the operator's
 * pods (kept in a map by the callbacks), children written by server-side apply (`K8s(kind.Pod).Apply`, deterministic
 * names `<app>-<n>`, field manager `pepr`), an Event by `K8s(kind.CoreEvent).Create`, and status by
 * `K8s(AppService).PatchStatus` when it changed. Reconciles run at most `workers` at once, one at a time per
 * AppService (a re-run if it changed meanwhile), and are retried after a second on error. The pods' watch is started
 * (its list done) before the AppServices', so the first reconciles see the pods that exist.
 * Same behaviour as the other peers: the same labels, a controller owner reference, Failed/Succeeded pods replaced,
 * status written when changed, one Event per scaling action.
 * Args: --kubeconfig FILE --max-concurrent-reconciles N (the kubeconfig reaches the library through KUBECONFIG).
 */
import { existsSync } from 'node:fs';
import type { V1Pod } from '@kubernetes/client-node';

const args = process.argv.slice(2);
const arg = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
// kubernetes-fluent-client reads the default kubeconfig (KUBECONFIG) on each request
process.env.KUBECONFIG = arg('--kubeconfig', process.env.KUBECONFIG ?? `${process.env.HOME}/.kube/config`);
if (!existsSync(process.env.KUBECONFIG)) {
  process.stderr.write(`--kubeconfig: ${process.env.KUBECONFIG} does not exist\n`);
  process.exit(2);
}
const workers = Number(arg('--max-concurrent-reconciles', '1'));

const { GenericKind, K8s, kind, RegisterKind } = await import('kubernetes-fluent-client');

class AppService extends GenericKind {
  declare spec?: { replicas?: number; image?: string; command?: string[] };
  declare status?: Record<string, unknown>;
}
RegisterKind(AppService, { group: 'app.example.com', version: 'v1alpha1', kind: 'AppService', plural: 'appservices' });

const MANAGED_BY = ['app.kubernetes.io/managed-by', 'appservice-operator'] as const;
const apps = new Map<string, AppService>();
const pods = new Map<string, V1Pod>();
const keyOf = (o: { metadata?: { namespace?: string; name?: string } }) =>
  `${o.metadata?.namespace}/${o.metadata?.name}`;

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
    running.add(key);
    active += 1;
    reconcile(key)
      .catch((err: unknown) => {
        process.stderr.write(`reconcile ${key}: ${(err as Error).message ?? JSON.stringify(err)}\n`);
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
  const app = apps.get(key);
  if (!app || app.metadata?.deletionTimestamp) return;
  const namespace = app.metadata?.namespace ?? '';
  const name = app.metadata?.name ?? '';
  const uid = app.metadata?.uid ?? '';
  const owned = [...pods.values()].filter(
    (p) =>
      p.metadata?.namespace === namespace && p.metadata?.ownerReferences?.some((o) => o.controller && o.uid === uid),
  );
  const live: V1Pod[] = [];
  for (const p of owned) {
    if (p.metadata?.deletionTimestamp) continue;
    if (p.status?.phase === 'Failed' || p.status?.phase === 'Succeeded') {
      await K8s(kind.Pod)
        .InNamespace(namespace)
        .Delete(p.metadata?.name ?? '');
      continue;
    }
    if (isActive(p)) live.push(p);
  }
  const desired = app.spec?.replicas ?? 1;
  const labels = {
    'app.kubernetes.io/name': 'appservice',
    'app.kubernetes.io/instance': name,
    [MANAGED_BY[0]]: MANAGED_BY[1],
  };
  const taken = new Set(owned.map((p) => p.metadata?.name));
  let created = 0;
  for (let n = 0; live.length < desired; n++) {
    const podName = `${name}-${n}`;
    if (taken.has(podName)) continue;
    const pod = await K8s(kind.Pod).Apply({
      metadata: {
        name: podName,
        namespace,
        labels,
        ownerReferences: [
          {
            apiVersion: 'app.example.com/v1alpha1',
            kind: 'AppService',
            name,
            uid,
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
    });
    taken.add(podName);
    live.push(pod);
    created += 1;
  }
  let deleted = 0;
  for (const p of live.splice(desired)) {
    await K8s(kind.Pod)
      .InNamespace(namespace)
      .Delete(p.metadata?.name ?? '');
    deleted += 1;
  }
  if (created > 0 || deleted > 0) {
    const now = new Date();
    await K8s(kind.CoreEvent).Create({
      metadata: { generateName: `${name}.`, namespace },
      involvedObject: { apiVersion: 'app.example.com/v1alpha1', kind: 'AppService', name, namespace, uid },
      reason: created > 0 ? 'ScalingUp' : 'ScalingDown',
      message: `${created > 0 ? `created ${created}` : `deleted ${deleted}`} pods (want ${desired})`,
      type: 'Normal',
      source: { component: 'appservice-operator' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
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
  await K8s(AppService).PatchStatus({ metadata: { name, namespace }, status });
}

const ownerKey = (p: V1Pod) => {
  const ref = p.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'AppService');
  return ref ? `${p.metadata?.namespace}/${ref.name}` : undefined;
};

const podWatch = K8s(kind.Pod)
  .WithLabel(...MANAGED_BY)
  .Watch((pod, phase) => {
    if (phase === 'DELETED') pods.delete(keyOf(pod));
    else pods.set(keyOf(pod), pod);
    const owner = ownerKey(pod);
    if (owner && apps.has(owner)) schedule(owner);
  });
const appWatch = K8s(AppService).Watch((app, phase) => {
  if (phase === 'DELETED') apps.delete(keyOf(app));
  else {
    apps.set(keyOf(app), app);
    schedule(keyOf(app));
  }
});
await podWatch.start();
await appWatch.start();
process.on('SIGTERM', () => {
  podWatch.close();
  appWatch.close();
  process.exit(0);
});
