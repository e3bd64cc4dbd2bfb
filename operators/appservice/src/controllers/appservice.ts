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
 *   declared to the expectations, so a lagging cache can never cause an overshoot or a double delete.
 * - Status: replicas (counted pods), readyReplicas, updatedReplicas, podNames (sorted), selector, observedGeneration,
 *   conditions Available, Progressing and ReplicaFailure. Events: ScalingUp / ScalingDown / RollingUpdate (Normal),
 *   FailedCreate / FailedDelete (Warning).
 * - A failed create or delete is retried with backoff (the error is rethrown after the status is written).
 */
import {
  type Condition,
  claimChildren,
  controllerOf,
  type EventRecorder,
  generationChanged,
  indexers,
  isApiError,
  isNotFound,
  keepFields,
  type Manager,
  type Permission,
  type Pod,
  Pods,
  permission,
  type ReconcileContext,
  type Reconciler,
  type Request,
  type Result,
  setCondition,
  updateStatusIfChanged,
} from '@opkit/runtime';
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
  permission(AppServices, ['patch'], { subresource: 'status' }),
  permission(Pods, ['list', 'watch', 'create', 'patch', 'delete']),
];

const MAX_BATCH = 64;
/** The pod index by instance label (the AppService's name): where orphans to adopt are found. */
const INSTANCE_INDEX = 'label:app.kubernetes.io/instance';

export class AppServiceReconciler implements Reconciler {
  readonly #events: EventRecorder;

  constructor(events: EventRecorder) {
    this.#events = events;
  }

  async reconcile(req: Request, ctx: ReconcileContext): Promise<Result> {
    const app = await ctx.cache.get(AppServices, req);
    if (!app || app.metadata.deletionTimestamp) return {}; // the garbage collector removes the pods
    const uid = app.metadata.uid ?? '';
    const selector = selectorLabels(app);
    const { claimed: pods } = await claimChildren({
      client: ctx.client,
      ownerType: AppServices,
      owner: app,
      childType: Pods,
      candidates: [
        ...(await ctx.cache.list(Pods, { index: { name: 'controller', value: uid } })),
        // pods of this instance name, owned or not (an index: not a scan of the namespace's pods)
        ...(await ctx.cache.list(Pods, { index: { name: INSTANCE_INDEX, value: app.metadata.name ?? '' } })),
      ],
      matches: (pod) =>
        pod.metadata.namespace === app.metadata.namespace &&
        Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v),
      signal: ctx.signal,
    });
    const hash = templateHash(app);
    const p = plan(app, pods, hash);
    let failure: { reason: 'FailedCreate' | 'FailedDelete'; error: unknown } | undefined;

    const deleted: string[] = [];
    for (const pod of p.delete) {
      try {
        await ctx.client.delete(
          Pods,
          { namespace: req.namespace ?? 'default', name: pod.metadata.name ?? '' },
          {
            preconditions: { uid: pod.metadata.uid ?? '' },
          },
        );
        ctx.expect.deleted(Pods, pod);
        deleted.push(pod.metadata.name ?? '');
      } catch (err) {
        if (isNotFound(err) || isApiError(err, 'Conflict')) continue; // already gone, or replaced meanwhile
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
        const results = await Promise.allSettled(
          Array.from({ length: size }, () => ctx.client.create(Pods, structuredClone(template))),
        );
        for (const r of results) {
          if (r.status === 'fulfilled') {
            ctx.expect.created(Pods, r.value);
            created.push(r.value);
          } else failure ??= { reason: 'FailedCreate', error: r.reason };
        }
        remaining -= size;
        if (failure) break;
      }
    }

    const message = (verb: string, n: number) => `${verb} ${n} pod${n === 1 ? '' : 's'}`;
    if (created.length > 0 || deleted.length > 0) {
      const what = p.rolling ? 'RollingUpdate' : created.length > 0 ? 'ScalingUp' : 'ScalingDown';
      const parts = [
        created.length > 0 ? message('created', created.length) : '',
        deleted.length > 0 ? message('deleted', deleted.length) : '',
      ];
      this.#events.event(
        AppServices,
        app,
        'Normal',
        what,
        `${parts.filter(Boolean).join(', ')} (want ${app.spec.replicas})`,
      );
    }
    if (failure) {
      this.#events.event(AppServices, app, 'Warning', failure.reason, errorText(failure.error));
    }

    const counted = [...p.active, ...created];
    await updateStatusIfChanged(ctx.client, AppServices, app, this.#status(app, counted, hash, p.rolling, failure));
    if (failure) throw failure.error; // retried with backoff
    return {};
  }

  #status(
    app: AppService,
    counted: readonly Pod[],
    hash: string,
    rolling: boolean,
    failure: { reason: string; error: unknown } | undefined,
  ): AppServiceStatus {
    const desired = app.spec.replicas ?? 1;
    const ready = counted.filter(isReady).length;
    const updated = counted.filter((p) => p.metadata.labels?.[LABELS.templateHash] === hash).length;
    const generation = app.metadata.generation ?? 0;
    const minAvailable = Math.max(0, desired - Math.max(1, app.spec.maxUnavailable ?? 1));
    const converged = counted.length === desired && updated === desired && ready === desired;
    let conditions = (app.status?.conditions ?? []) as Condition[];
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
      conditions: conditions as NonNullable<AppServiceStatus['conditions']>,
    };
  }
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 500 ? `${text.slice(0, 497)}...` : text;
}

/** An orphaned AppService pod maps to the AppService its instance label names (which may adopt it). */
function orphanOwner(pod: Pod): Request[] {
  const name = pod.metadata.labels?.[LABELS.instance];
  if (controllerOf(pod) || pod.metadata.labels?.[LABELS.name] !== APP_NAME || !name) return [];
  return [{ namespace: pod.metadata.namespace ?? 'default', name }];
}

/** Registers the AppService controller with the manager (what `opkit create api --controller` wires into main.ts). */
export function setupAppServiceController(mgr: Manager, options: { resyncPeriodMs?: number } = {}): void {
  // the cache keeps of each pod what this controller reads: metadata, phase and conditions (not its spec)
  mgr.cache.transform(Pods, keepFields('status.phase', 'status.conditions'));
  mgr.cache.indexField(Pods, INSTANCE_INDEX, indexers.label(LABELS.instance));
  mgr
    .controller()
    .named('appservice')
    .for(AppServices, generationChanged)
    .owns(Pods)
    .watches(Pods, orphanOwner)
    .withOptions(options.resyncPeriodMs ? { resyncPeriodMs: options.resyncPeriodMs } : {})
    .complete(new AppServiceReconciler(mgr.eventRecorder(MANAGED_BY)));
}

export { MANAGED_BY };
