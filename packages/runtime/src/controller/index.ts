/**
 * @module @opkit/runtime/controller
 * The pieces controllers are built from, for when the builder (`mgr.controller(kind)…reconcile(fn)`, in
 * `@opkit/runtime`) is not enough: `ControllerBuilder` and `Controller`, the request-based reconciler (the layer below
 * the object-first one) and its adapter `objectReconciler`, event handlers, predicates, expectations and error policy
 * types.
 */
export {
  type BuilderEnding,
  type BuilderOptions,
  ControllerBuilder,
  ControllerBuilderFor,
  type ControllerDeps,
  type ObjectErrorPolicy,
} from './builder.ts';
export { Controller, ControllerError, type ControllerOptions } from './controller.ts';
export { Expectations } from './expectations.ts';
export { type MapFunc, requestForObject, requestsForOwner } from './handlers.ts';
export {
  type ApiListOptions,
  type ApiReader,
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
export type { ErrorInfo, ErrorLogLevel, ErrorPolicy } from './policy.ts';
export {
  and,
  annotationsChanged,
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
  type ReconcileEvents,
  type ReconcileFunc,
  type Reconciler,
  type TerminalErrorCode,
} from './reconcile.ts';
