/**
 * @module controller/appservice
 * The AppService reconciler. Level-triggered: it reads the AppService and its pods from the cache, plans (pods.ts),
 * acts, and writes the status — only when it changed.
 *
 * - Pods are claimed as the ReplicaSet controller claims them (`claimChildren`): those it controls and that carry the
 *   selector labels; orphans that carry them are adopted (after a fresh read of the AppService), so an AppService
 *   re-created after `kubectl delete --cascade=orphan` takes its old pods back instead of running a second set; pods
 *   it controls whose labels no longer match are released. An orphan that appears later is mapped to the AppService
 *   its instance label names.
 * - Creates run in slow-start batches (1, 2, 4, … up to 64 at once) and stop at the first failure, as the ReplicaSet
 *   controller does, so a quota or admission error costs one failed request, not hundreds. Every create and delete is
 *   declared to the expectations (by `ctx.create` and `ctx.delete`), so a lagging cache cannot cause an overshoot or
 *   a double delete, not even after a create whose answer was lost (the connection reset after the apiserver stored
 *   the pod): the next reconcile first looks for that pod in the apiserver and waits until the cache has it.
 * - Status: replicas (counted pods), readyReplicas, updatedReplicas, podNames (sorted), selector, observedGeneration,
 *   conditions Available, Progressing and ReplicaFailure. Events: ScalingUp / ScalingDown / RollingUpdate (Normal),
 *   FailedCreate / FailedDelete (Warning).
 * - A failed create or delete is retried with backoff (the error is rethrown after the status is written).
 */
import {
  defineIndex,
  indexers,
  type Manager,
  type ObjectContext,
  type Permission,
  permission,
  type ReconcileRequest,
  type Result,
  setCondition,
} from '@opkit/runtime';
import { keepFields } from '@opkit/runtime/cache';
import { generationChanged } from '@opkit/runtime/controller';
import { claimChildren, controllerOf } from '@opkit/runtime/helpers';
import { type Pod, Pods } from '@opkit/runtime/kinds';
import { type AppService, type AppServiceStatus, AppServices } from '../api/v1alpha1/appservice.ts';
import {
  APP_NAME,
  isReady,
  LABELS,
  MANAGED_BY,
  plan,
  podFor,
  selectorLabels,
  selectorString,
  templateHash,
} from './pods.ts';

/** What this controller does with the API: the generated ClusterRole grants exactly this (plus the manager's own). */
export const permissions: readonly Permission[] = [
  permission(AppServices, ['get', 'list', 'watch']),
  permission(AppServices, ['patch', 'update'], { subresource: 'status' }),
  permission(Pods, ['list', 'watch', 'create', 'patch', 'delete']),
];

const MAX_BATCH = 64;
/** Pods by instance label (the AppService's name): where orphans to adopt are found, without a namespace scan. */
export const podsByInstance = defineIndex(Pods, 'label:app.kubernetes.io/instance', indexers.label(LABELS.instance));

type Failure = { reason: 'FailedCreate' | 'FailedDelete'; error: unknown };

/** Reconciles one AppService (present, not being deleted: the garbage collector removes the pods of one that is). */
export async function reconcileAppService(app: AppService, ctx: ObjectContext<AppService>): Promise<Result> {
  const selector = selectorLabels(app);
  const { claimed: pods } = await claimChildren({
    client: ctx.rawClient,
    ownerType: AppServices,
    owner: app,
    childType: Pods,
    candidates: [
      ...(await ctx.owned(Pods, { terminating: true })),
      ...(await ctx.cache.list(Pods, { index: podsByInstance.is(app.metadata.name ?? '') })), // owned or not
    ],
    matches: (pod) =>
      pod.metadata.namespace === app.metadata.namespace &&
      Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v),
    signal: ctx.signal,
  });
  const hash = templateHash(app);
  const p = plan(app, pods, hash);
  let failure: Failure | undefined;

  const deleted: Pod[] = [];
  for (const pod of p.delete) {
    try {
      if (await ctx.delete(Pods, pod)) deleted.push(pod); // false: already gone, or replaced meanwhile
    } catch (err) {
      failure = { reason: 'FailedDelete', error: err };
      break;
    }
  }

  const created: Pod[] = [];
  if (!failure && p.create > 0) {
    const template = podFor(app, hash);
    let remaining = p.create;
    for (let batch = 1; remaining > 0; batch = Math.min(batch * 2, MAX_BATCH)) {
      const size = Math.min(batch, remaining);
      const results = await Promise.allSettled(Array.from({ length: size }, () => ctx.create(Pods, template)));
      for (const r of results) {
        if (r.status === 'fulfilled') created.push(r.value);
        else failure ??= { reason: 'FailedCreate', error: r.reason };
      }
      remaining -= size;
      if (failure) break;
    }
  }

  const count = (verb: string, n: number) => (n > 0 ? [`${verb} ${n} pod${n === 1 ? '' : 's'}`] : []);
  if (created.length > 0 || deleted.length > 0) {
    const what = p.rolling ? 'RollingUpdate' : created.length > 0 ? 'ScalingUp' : 'ScalingDown';
    const done = [...count('created', created.length), ...count('deleted', deleted.length)].join(', ');
    ctx.events.normal(what, `${done} (want ${app.spec.replicas})`);
  }
  if (failure) ctx.events.warning(failure.reason, errorText(failure.error));

  await ctx.status(statusOf(app, [...p.active, ...created], hash, p.rolling, failure));
  if (failure) throw failure.error; // retried with backoff
  return {};
}

function statusOf(
  app: AppService,
  counted: readonly Pod[],
  hash: string,
  rolling: boolean,
  failure: Failure | undefined,
): AppServiceStatus {
  const desired = app.spec.replicas ?? 1;
  const ready = counted.filter(isReady).length;
  const updated = counted.filter((p) => p.metadata.labels?.[LABELS.templateHash] === hash).length;
  const generation = app.metadata.generation ?? 0;
  const minAvailable = Math.max(0, desired - Math.max(1, app.spec.maxUnavailable ?? 1));
  const converged = counted.length === desired && updated === desired && ready === desired;
  let conditions = app.status?.conditions ?? [];
  const set = (type: string, status: 'True' | 'False', reason: string, msg: string) => {
    conditions = setCondition(conditions, {
      type,
      status,
      reason,
      message: msg,
      observedGeneration: generation,
    }).conditions;
  };
  set(
    'Available',
    ready >= minAvailable ? 'True' : 'False',
    ready >= minAvailable ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
    `${ready} of ${desired} pods ready (at least ${minAvailable} needed)`,
  );
  set(
    'Progressing',
    'True',
    converged ? 'Complete' : rolling ? 'RollingUpdate' : 'Scaling',
    converged
      ? `${desired} pods of the current template are ready`
      : `${updated} of ${desired} pods updated, ${ready} ready`,
  );
  set(
    'ReplicaFailure',
    failure ? 'True' : 'False',
    failure ? failure.reason : 'NoFailure',
    failure ? errorText(failure.error) : 'pods are created and deleted as needed',
  );
  return {
    replicas: counted.length,
    readyReplicas: ready,
    updatedReplicas: updated,
    podNames: counted.map((p) => p.metadata.name ?? '').sort(),
    selector: selectorString(app),
    observedGeneration: generation,
    conditions,
  };
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

/** An orphaned AppService pod maps to the AppService its instance label names (which may adopt it). */
function orphanOwner(pod: Pod): ReconcileRequest[] {
  const name = pod.metadata.labels?.[LABELS.instance];
  if (controllerOf(pod) || pod.metadata.labels?.[LABELS.name] !== APP_NAME || !name) return [];
  return [{ namespace: pod.metadata.namespace ?? 'default', name }];
}

/** Registers the AppService controller with the manager (what `opkit create api --controller` wires into main.ts). */
export function setupAppServiceController(mgr: Manager, options: { resyncPeriodMs?: number } = {}): void {
  // the cache keeps of each pod what this controller reads: metadata, phase and conditions (not its spec)
  mgr.cache.transform(Pods, keepFields('status.phase', 'status.conditions'));
  mgr
    .controller(AppServices, generationChanged)
    .named('appservice')
    .owns(Pods)
    .watches(Pods, orphanOwner)
    .withOptions(options.resyncPeriodMs ? { resyncPeriodMs: options.resyncPeriodMs } : {})
    .reconcile(reconcileAppService);
}

export { MANAGED_BY };
