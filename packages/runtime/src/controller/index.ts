/**
 * @module @opkit/runtime/controller
 * The pieces controllers are built from, for when the builder (`mgr.controller(kind)…reconcile(fn)`, in
 * `@opkit/runtime`) is not enough: `ControllerBuilder` and `Controller`, the request-based reconciler (the layer below
 * the object-first one) and its adapter `objectReconciler`, event handlers and mappers (`referencing`, `byIndex`: watch A,
 * reconcile the Bs that reference it), predicates (`generationChanged`, …),
 * expectations and the error policy (`defaultErrorPolicy`, `retryWithBackoff`, `retryAfter`, `giveUp`: what
 * `.onError(…)` answers; `ReconcileTimeoutError`, what a reconcile past `reconcileTimeoutMs` ends as), and
 * `DynamicWatch`, what `ctx.watchKinds` takes.
 */
export {
  type BuilderEnding,
  type BuilderOptions,
  ControllerBuilder,
  ControllerBuilderFor,
  type ControllerDeps,
  type ObjectErrorPolicy,
} from './builder.ts';
export { Controller, type ControllerOptions } from './controller.ts';
export { ReconcileTimeoutError, type ReconcileTimeoutErrorCode } from './deadline.ts';
export type { DynamicWatch } from './dynamic.ts';
export { Expectations, type LiveSource } from './expectations.ts';
export { type CacheReader, type MapContext, type MapFunc, requestForObject, requestsForOwner } from './handlers.ts';
export {
  type ApiListOptions,
  type ApiReader,
  type ChildDeleteOptions,
  type Finalize,
  type MergePatch,
  type ObjectEvents,
  type ObjectReconcileFunc,
  type ObjectReconcilerOptions,
  type ObjectResult,
  objectContext,
  objectReconciler,
  type StatusOf,
} from './object.ts';
export {
  defaultErrorPolicy,
  type ErrorAction,
  type ErrorInfo,
  type ErrorLogLevel,
  type ErrorPolicy,
  giveUp,
  retryAfter,
  retryWithBackoff,
} from './policy.ts';
export {
  and,
  annotationsChanged,
  generationChanged,
  labelsChanged,
  not,
  or,
  type Predicate,
  predicate,
  resourceVersionChanged,
} from './predicates.ts';
export {
  type Expect,
  isTerminalError,
  type ReconcileContext,
  type ReconcileEvents,
  type ReconcileFunc,
  type Reconciler,
  type TerminalErrorCode,
} from './reconcile.ts';
export { byIndex, type ReferenceOptions, referencing } from './references.ts';
