// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/kvsnapshot
 * The KVSnapshot controller: one Job per snapshot (snapshot.ts plans it), the stored snapshot written when the Job
 * succeeded, the phase in the status, and a finalizer that removes the stored snapshot when the KVSnapshot is
 * deleted (its Job goes with it by owner reference). A changed KVStore reconciles the snapshots that name it (an
 * field index on `spec.storeName`, `referencing`): a snapshot waiting for its store starts as soon as the store is Ready.
 */
import {
  done,
  isNotFound,
  type Manager,
  type ObjectContext,
  type Permission,
  permission,
  type Result,
} from '@opkit/runtime';
import { referencing } from '@opkit/runtime/controller';
import { ConfigMaps, Jobs } from '@opkit/runtime/kinds';
import { type KVSnapshot, KVSnapshots } from '../api/v1alpha1/kvsnapshot.ts';
import { KVStores } from '../api/v1alpha1/kvstore.ts';
import { ensure, named } from './children.ts';
import { sibling, snapshotDataName, snapshotJobName } from './names.ts';
import { planSnapshot, snapshotData, snapshotJob } from './snapshot.ts';

/** The finalizer that removes the stored snapshot. */
export const SNAPSHOT_FINALIZER = 'kv.example.com/snapshot-data';

export const permissions: readonly Permission[] = [
  permission(KVSnapshots, ['get', 'list', 'watch', 'patch']),
  permission(KVSnapshots, ['patch', 'update'], { subresource: 'status' }),
  permission(KVStores, ['list', 'watch']),
  permission(Jobs, ['list', 'watch', 'create']),
  permission(ConfigMaps, ['create', 'delete']),
];

/** Reconciles one KVSnapshot (present, not being deleted: the finalizer's cleanup handles that). */
export async function reconcileKVSnapshot(snap: KVSnapshot, ctx: ObjectContext<KVSnapshot>): Promise<Result> {
  const store = await ctx.cache.get(KVStores, sibling(snap, snap.spec.storeName));
  const job = named(await ctx.owned(Jobs, { terminating: true }), snapshotJobName(snap));
  const plan = planSnapshot(snap, store, job);
  if (plan.createJob && store && (await ensure(() => ctx.create(Jobs, snapshotJob(snap, store)))))
    ctx.events.normal('SnapshotStarted', `taking a snapshot of KVStore ${store.metadata.name}`);
  if (plan.writeData && job) {
    await ensure(() => ctx.create(ConfigMaps, snapshotData(snap, store, job), { owned: false })); // only the finalizer removes it
    ctx.events.normal('SnapshotSucceeded', `stored in ConfigMap ${snapshotDataName(snap.metadata.name ?? '')}`);
  }
  if (plan.status.phase === 'Failed' && snap.status?.phase !== 'Failed')
    ctx.events.warning('SnapshotFailed', plan.status.message ?? 'the snapshot Job failed');
  await ctx.status(plan.status);
  return done();
}

/** Removes the stored snapshot (safe to repeat: an absent ConfigMap is already removed). */
export async function removeSnapshotData(snap: KVSnapshot, ctx: ObjectContext<KVSnapshot>): Promise<Result> {
  try {
    await ctx.rawClient.delete(ConfigMaps, sibling(snap, snapshotDataName(snap.metadata.name ?? '')), {
      signal: ctx.signal,
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  return done();
}

/** Registers the KVSnapshot controller. */
export function setupKVSnapshotController(mgr: Manager): void {
  mgr
    .controller(KVSnapshots)
    .named('kvsnapshot')
    .owns(Jobs)
    .watches(KVStores, referencing(KVSnapshots, 'spec.storeName')) // the snapshots of a changed store
    .finalize(SNAPSHOT_FINALIZER, removeSnapshotData)
    .reconcile(reconcileKVSnapshot);
}
