// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/widget
 * The Widget controller of the planted operators: `PLANTED_BUG` chooses the bug class (src/controllers/planted/),
 * `PLANTED_FIXED=true` its fixed version. Its permissions are what every variant needs, so each runs under the same
 * generated RBAC.
 */
import { type Manager, type Permission, permission } from '@opkit/runtime';
import { ConfigMaps, Jobs } from '@opkit/runtime/kinds';
import { Widgets } from '../api/v1/widget.ts';
import { crossShard } from './planted/cross-shard.ts';
import { finalizerLeak } from './planted/finalizer-leak.ts';
import { intermediateState } from './planted/intermediate-state.ts';
import { notIdempotent } from './planted/not-idempotent.ts';
import { orphanDelete } from './planted/orphan-delete.ts';
import { staleDuplicates } from './planted/stale-duplicates.ts';
import { statusTimestamp } from './planted/status-timestamp.ts';
import type { PlantedBug } from './planted/variant.ts';

export const PLANTED: Readonly<Record<string, PlantedBug>> = {
  'stale-duplicates': staleDuplicates,
  'not-idempotent': notIdempotent,
  'finalizer-leak': finalizerLeak,
  'orphan-delete': orphanDelete,
  'status-timestamp': statusTimestamp,
  'intermediate-state': intermediateState,
  'cross-shard': crossShard,
};

export const permissions: readonly Permission[] = [
  permission(Widgets, ['get', 'list', 'watch', 'patch', 'update']),
  permission(Widgets, ['get', 'patch', 'update'], { subresource: 'status' }),
  permission(Widgets, ['update'], { subresource: 'finalizers' }),
  permission(ConfigMaps, ['get', 'list', 'watch', 'create', 'delete']),
  permission(Jobs, ['get', 'list', 'watch', 'create', 'delete']),
];

/** Registers the Widget controller of the bug `bug` (its fixed version when `fixed`). */
export function setupWidgetController(
  mgr: Manager,
  bug = process.env.PLANTED_BUG ?? 'status-timestamp',
  fixed = process.env.PLANTED_FIXED === 'true',
): void {
  const planted = PLANTED[bug];
  if (planted === undefined) throw new Error(`PLANTED_BUG: "${bug}" is not one of ${Object.keys(PLANTED).join(', ')}`);
  const variant = fixed ? planted.fixed : planted.buggy;
  let builder = mgr.controller(Widgets).named('widget').owns(ConfigMaps);
  if (variant.ownsJobs) builder = builder.owns(Jobs);
  if (variant.request) {
    builder.complete(variant.request);
    return;
  }
  const object = variant.finalizer ? builder.finalize(variant.finalizer.name, variant.finalizer.cleanup) : builder;
  if (variant.reconcile) object.reconcile(variant.reconcile);
}
