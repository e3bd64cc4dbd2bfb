// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/kvstore
 * The KVStore controller. Level-triggered: it reads the store's children from the cache, plans (restore.ts,
 * statefulset.ts, store-status.ts: pure and unit-tested), acts, and writes the status only when it changed.
 *
 * - The credentials Secret is created once, with a random password, and never touched again (immutable; an
 *   AlreadyExists from a lagging cache is the Secret already made). Its data is never logged, put in an Event or in
 *   the status, and the cache keeps only the Secrets' metadata, so the operator holds no password after creating it.
 * - The headless Service and the StatefulSet (a PVC per pod from its volumeClaimTemplate) are created when missing.
 * - With `spec.restoreFrom`, the StatefulSet stays at 0 replicas until the one restore Job succeeded (restore.ts).
 * - A version change rolls one pod at a time through the StatefulSet's partition (statefulset.ts), an Event per
 *   step (each its own Event, related to the StatefulSet as the step left it: `stepEvent`).
 * - A changed KVSnapshot reconciles the stores restoring from it (a field index on `spec.restoreFrom`, `referencing`).
 */
import { randomBytes } from 'node:crypto';
import {
  done,
  isAlreadyExists,
  isApiError,
  isConditionFalse,
  type Manager,
  type ObjectContext,
  type Permission,
  permission,
  type Result,
} from '@opkit/runtime';
import { keepFields } from '@opkit/runtime/cache';
import { referencing } from '@opkit/runtime/controller';
import { Jobs, PersistentVolumeClaims, Secrets, Services, StatefulSets } from '@opkit/runtime/kinds';
import { KVSnapshots } from '../api/v1alpha1/kvsnapshot.ts';
import { type KVStore, KVStores } from '../api/v1alpha1/kvstore.ts';
import { ensure, named } from './children.ts';
import { restoreJobName, secretName, selectorLabels, serviceName, sibling, statefulSetName } from './names.ts';
import { planRestore, type RestorePlan, restoreJob } from './restore.ts';
import { desiredSecret, desiredService, desiredStatefulSet, planRollout, stepEvent } from './statefulset.ts';
import { pvcsToGrow } from './storage.ts';
import { storeStatus, type VolumesState } from './store-status.ts';

export const permissions: readonly Permission[] = [
  permission(KVStores, ['get', 'list', 'watch']),
  permission(KVStores, ['patch', 'update'], { subresource: 'status' }),
  permission(KVSnapshots, ['list', 'watch']),
  permission(StatefulSets, ['list', 'watch', 'create', 'patch']),
  permission(Services, ['list', 'watch', 'create']),
  permission(Secrets, ['list', 'watch', 'create']),
  permission(Jobs, ['get', 'list', 'watch', 'create']),
  permission(PersistentVolumeClaims, ['list', 'watch', 'patch']),
];

/** The restore's next step (restore.ts), acted on: the one Job created when the plan says so, Events on its ends. */
async function advanceRestore(store: KVStore, ctx: ObjectContext<KVStore>): Promise<RestorePlan> {
  const from = store.spec.restoreFrom;
  const snapshot = from ? await ctx.cache.get(KVSnapshots, sibling(store, from)) : undefined;
  const job = named(await ctx.owned(Jobs, { terminating: true }), restoreJobName(store));
  let restore = planRestore(store, snapshot, job);
  if (restore.createJob && restore.restore) {
    try {
      const created = await ctx.create(Jobs, restoreJob(store));
      restore = { ...restore, restore: { ...restore.restore, jobUID: created.metadata.uid ?? '' } };
      ctx.events.normal('Restoring', `restoring from KVSnapshot ${from} (Job ${created.metadata.name})`);
    } catch (err) {
      if (!isAlreadyExists(err)) throw err;
      // made by a predecessor just before it stopped, not yet in this cache: read it, and record its uid
      const existing = await ctx.apiReader.get(Jobs, sibling(store, restoreJobName(store)));
      if (existing) restore = planRestore(store, snapshot, existing);
    }
  }
  const was = store.status?.restore?.phase;
  if (restore.restore?.phase === 'Succeeded' && was !== 'Succeeded')
    ctx.events.normal('Restored', `restored from KVSnapshot ${from}`);
  if (restore.restore?.phase === 'Failed' && was !== 'Failed')
    ctx.events.warning('RestoreFailed', restore.restore.message ?? 'the restore failed');
  return restore;
}

/** Grows the PVCs smaller than `spec.storage` (storage.ts); a cluster that cannot expand them refuses (403). */
async function growVolumes(store: KVStore, ctx: ObjectContext<KVStore>): Promise<VolumesState> {
  const pvcs = await ctx.cache.list(PersistentVolumeClaims, {
    namespace: store.metadata.namespace ?? '',
    labelSelector: selectorLabels(store),
  });
  for (const pvc of pvcsToGrow(store, pvcs)) {
    try {
      await ctx.patch(PersistentVolumeClaims, pvc, {
        spec: { resources: { requests: { storage: store.spec.storage } } },
      });
    } catch (err) {
      if (!isApiError(err, 'Forbidden')) throw err;
      const refused = `${pvc.metadata.name} cannot grow to ${store.spec.storage}: ${err instanceof Error ? err.message : ''}`;
      if (!isConditionFalse(store.status?.conditions, 'VolumesResized')) ctx.events.warning('ResizeRefused', refused);
      return { refused };
    }
  }
  return {};
}

/** Reconciles one KVStore (present, not being deleted: the garbage collector removes its children). */
export async function reconcileKVStore(store: KVStore, ctx: ObjectContext<KVStore>): Promise<Result> {
  if (!named(await ctx.owned(Secrets), secretName(store)))
    await ensure(() => ctx.create(Secrets, desiredSecret(store, randomBytes(24).toString('base64url'))));
  if (!named(await ctx.owned(Services), serviceName(store)))
    await ensure(() => ctx.create(Services, desiredService(store)));
  const restore = await advanceRestore(store, ctx);

  const sts = named(await ctx.owned(StatefulSets), statefulSetName(store));
  const replicas = restore.gate ? 0 : store.spec.replicas;
  const rollout = sts ? planRollout(store, sts, replicas) : undefined;
  // the restore's progress is recorded before anything acts on it: a successor reads it from the status, and the
  // StatefulSet is scaled only after a Succeeded restore is written
  const prev = store.status?.restore;
  if (restore.restore && (restore.restore.phase !== prev?.phase || restore.restore.jobUID !== prev?.jobUID))
    await ctx.status(storeStatus(store, sts, restore, rollout));
  if (!sts) {
    await ensure(() => ctx.create(StatefulSets, desiredStatefulSet(store, replicas)));
  } else if (rollout) {
    // the plan was made from the cached StatefulSet: its resourceVersion is the patch's precondition, so a stale plan
    // fails with Conflict (retried with fresh state) instead of repeating a step, and its Event, from an old partition
    const patched = rollout.patch
      ? await ctx.patch(StatefulSets, sts, {
          ...rollout.patch,
          metadata: { resourceVersion: sts.metadata.resourceVersion ?? null },
        })
      : undefined;
    if (rollout.step && patched) {
      const e = stepEvent(store, rollout.step, patched);
      ctx.events.normal(e.reason, e.note, e.options);
    }
  }
  const volumes = sts ? await growVolumes(store, ctx) : {};
  await ctx.status(storeStatus(store, sts, restore, rollout, volumes));
  return done();
}

/** Registers the KVStore controller (what `opkit create api --controller` wires into main.ts). */
export function setupKVStoreController(mgr: Manager): void {
  mgr.cache.transform(Secrets, keepFields('type')); // the cache keeps no Secret data: no password in memory
  mgr
    .controller(KVStores)
    .named('kvstore')
    .owns(StatefulSets)
    .owns(Services)
    .owns(Secrets)
    .owns(Jobs)
    .watches(KVSnapshots, referencing(KVStores, 'spec.restoreFrom')) // the stores restoring from a changed snapshot
    .reconcile(reconcileKVStore);
}
