/**
 * @module controller/pods
 * The pure part of the AppService controller: the pod an AppService asks for, the template hash that tells old pods
 * from new ones, how owned pods are counted, and which pods go first when some must go.
 *
 * Rules (the seed's, fixed): a pod counts when it is Pending or Running and not terminating; Failed and Succeeded pods
 * are replaced; pods are named by `generateName` (never a fixed name) and carry every selector label (so they are
 * always found again). Surplus pods are deleted old-template first, then pending before running, not-ready before
 * ready, newest first — never one that is already terminating.
 */
import { createHash } from 'node:crypto';
import type { Pod } from '@opkit/runtime/kinds';
import { type AppService, AppServices } from '../api/v1alpha1/appservice.ts';

export const LABELS = {
  name: 'app.kubernetes.io/name',
  instance: 'app.kubernetes.io/instance',
  managedBy: 'app.kubernetes.io/managed-by',
  templateHash: 'app.example.com/template-hash',
} as const;
export const APP_NAME = 'appservice';
export const MANAGED_BY = 'appservice-operator';

/** The labels every pod of `app` has (and the status selector names). */
export function selectorLabels(app: AppService): Record<string, string> {
  return { [LABELS.name]: APP_NAME, [LABELS.instance]: app.metadata.name ?? '', [LABELS.managedBy]: MANAGED_BY };
}

export function selectorString(app: AppService): string {
  return Object.entries(selectorLabels(app))
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

/** The container an AppService asks for (defaults applied as the CRD would). */
function container(app: AppService): NonNullable<Pod['spec']>['containers'][number] {
  const s = app.spec;
  return {
    name: 'app',
    image: s.image ?? 'busybox',
    ...(s.command && s.command.length > 0 ? { command: [...s.command] } : {}),
    ...(s.args && s.args.length > 0 ? { args: [...s.args] } : {}),
    ...(s.env && s.env.length > 0 ? { env: s.env.map((e) => ({ name: e.name, value: e.value ?? '' })) } : {}),
    ...(s.resources ? { resources: JSON.parse(JSON.stringify(s.resources)) as Record<string, never> } : {}),
    ...(s.ports && s.ports.length > 0
      ? {
          ports: s.ports.map((p) => ({
            containerPort: p.containerPort,
            protocol: p.protocol ?? 'TCP',
            ...(p.name ? { name: p.name } : {}),
          })),
        }
      : {}),
  };
}

/** A short hash of everything in the pod template that a change of must roll the pods. */
export function templateHash(app: AppService): string {
  return createHash('sha256')
    .update(stableJson(container(app)))
    .digest('hex')
    .slice(0, 10);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The pod to create for `app`: generateName `<app>-`, selector + template-hash labels, controller owner reference. */
export function podFor(app: AppService, hash: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `${app.metadata.name}-`,
      namespace: app.metadata.namespace ?? 'default',
      labels: { ...selectorLabels(app), [LABELS.templateHash]: hash },
      ownerReferences: [
        {
          apiVersion: AppServices.apiVersion,
          kind: AppServices.kind,
          name: app.metadata.name ?? '',
          uid: app.metadata.uid ?? '',
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { containers: [container(app)], restartPolicy: 'Always', enableServiceLinks: false },
  };
}

export function isTerminating(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

export function isFinished(pod: Pod): boolean {
  return pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
}

/** Counted: Pending or Running (or not yet reported) and not terminating. */
export function isActive(pod: Pod): boolean {
  if (isTerminating(pod)) return false;
  const phase = pod.status?.phase;
  return phase === undefined || phase === 'Pending' || phase === 'Running' || phase === 'Unknown';
}

export function isReady(pod: Pod): boolean {
  return (
    pod.status?.phase === 'Running' &&
    (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
}

/** The order in which surplus pods are deleted: old template, pending, not ready, newest — first. */
export function deletionOrder(pods: readonly Pod[], currentHash: string): Pod[] {
  const rank = (p: Pod) => [
    p.metadata.labels?.[LABELS.templateHash] === currentHash ? 1 : 0,
    p.status?.phase === 'Running' ? 1 : 0,
    isReady(p) ? 1 : 0,
  ];
  return [...pods].sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return (ra[i] as number) - (rb[i] as number);
    // newest first, then by name — in code-unit order, the same on every machine whatever its locale
    return (
      byCodeUnit(b.metadata.creationTimestamp ?? '', a.metadata.creationTimestamp ?? '') ||
      byCodeUnit(a.metadata.name ?? '', b.metadata.name ?? '')
    );
  });
}

export interface Plan {
  /** Pods to create now. */
  readonly create: number;
  /** Pods to delete now (finished ones, surplus, and old-template ones the rollout may replace). */
  readonly delete: readonly Pod[];
  /** Counted pods after this plan's deletes (for status). */
  readonly active: readonly Pod[];
  readonly rolling: boolean;
}

/**
 * What to do, given the owned pods. Scale: create the missing, delete the surplus. Rollout (the template changed):
 * with the count right, replace old-template pods while at most `maxUnavailable` pods are unavailable (not ready) —
 * an old pod that is not ready can always go (it is unavailable already).
 */
export function plan(app: AppService, pods: readonly Pod[], currentHash: string): Plan {
  const desired = app.spec.replicas ?? 1;
  const maxUnavailable = Math.max(1, app.spec.maxUnavailable ?? 1);
  const finished = pods.filter((p) => !isTerminating(p) && isFinished(p));
  const active = pods.filter(isActive);
  const toDelete: Pod[] = [...finished];
  let keep = active;
  if (active.length > desired) {
    const order = deletionOrder(active, currentHash);
    const surplus = order.slice(0, active.length - desired);
    toDelete.push(...surplus);
    keep = active.filter((p) => !surplus.includes(p));
  }
  const old = keep.filter((p) => p.metadata.labels?.[LABELS.templateHash] !== currentHash);
  const rolling = old.length > 0;
  if (rolling && keep.length === desired) {
    const unavailable = keep.filter((p) => !isReady(p)).length;
    const budget = Math.max(0, maxUnavailable - unavailable);
    const oldNotReady = old.filter((p) => !isReady(p));
    const oldReady = deletionOrder(
      old.filter((p) => isReady(p)),
      currentHash,
    ).slice(0, budget);
    const replace = [...oldNotReady, ...oldReady];
    toDelete.push(...replace);
    keep = keep.filter((p) => !replace.includes(p));
  }
  return { create: Math.max(0, desired - keep.length), delete: toDelete, active: keep, rolling };
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
