// scaffolded by opkit — this file is yours to edit
/**
 * @module controllers/planted/variant
 * What a planted operator is: a reconcile of Widgets, an optional finalizer, and the kinds it owns. Each bug class
 * has two: `buggy`, written as a user who has not met the fault would, and `fixed`.
 */
import type { ObjectContext, Result } from '@opkit/runtime';
import type { ReconcileFunc } from '@opkit/runtime/controller';
import type { Widget } from '../../api/v1/widget.ts';

export type WidgetReconcile = (w: Widget, ctx: ObjectContext<Widget>) => Promise<Result>;

export interface Variant {
  /** An object reconcile (the Widget, present and not being deleted), or… */
  readonly reconcile?: WidgetReconcile;
  /** …a request reconcile, that reads the Widget itself and sees it while it is deleted too. */
  readonly request?: ReconcileFunc;
  /** Clean-up behind a finalizer (opkit's `.finalize`). */
  readonly finalizer?: { readonly name: string; readonly cleanup: WidgetReconcile };
  /** Whether it owns Jobs (it always owns ConfigMaps). */
  readonly ownsJobs?: boolean;
}

export interface PlantedBug {
  /** What the bug is, and what catches it. */
  readonly summary: string;
  readonly buggy: Variant;
  readonly fixed: Variant;
}

/** The name of a Widget's part `i`, or of its `suffix` child. */
export const childName = (w: Widget, suffix: string | number): string => `${w.metadata.name}-${suffix}`;

/** The Widget's child `name`, by namespace and name. */
export const at = (w: Widget, name: string) => ({ namespace: w.metadata.namespace ?? '', name });

/** `observedGeneration` for a status: the Widget's generation. */
export const observed = (w: Widget) => ({ observedGeneration: w.metadata.generation ?? 0 });

/** A ConfigMap of the Widget, in its namespace. */
export const configMap = (w: Widget, name: string, data: Record<string, string> = {}) => ({
  metadata: { ...at(w, name), labels: { 'planted.example.com/widget': w.metadata.name ?? '' } },
  data,
});
