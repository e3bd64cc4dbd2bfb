/**
 * @module @opkit/runtime/helpers
 * Building blocks an object-first reconciler's context already applies for you, for request-based reconcilers and
 * other code: Events, finalizers, owner references (`controllerOf`, `setControllerReference`, …) and adoption
 * (`claimChildren`, `ClaimError`), RBAC manifests from permissions, status written only on change (sharding's names,
 * `shardLabelsOf` and `shardingPermissions` among them, are `@opkit/runtime/sharding`). The condition
 * helpers and `permission` live, all of them, in `@opkit/runtime`.
 */

export { ClaimError, type ClaimErrorCode, type ClaimOptions, type ClaimResult, claimChildren } from './claim.ts';
export {
  type EventObjectReference,
  type EventOptions,
  EventRecorder,
  type EventRecorderOptions,
  type EventType,
  objectReference,
} from './events.ts';
export { addFinalizer, type FinalizerHandlers, finalizer, hasFinalizer, removeFinalizer } from './finalizers.ts';
export {
  controllerOf,
  isControlledBy,
  OwnerReferenceError,
  type OwnerReferenceErrorCode,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from './ownerrefs.ts';
export {
  managerPermissions,
  metricsAuthPermissions,
  metricsReaderClusterRole,
  type PolicyRule,
  policyRules,
  type RbacManifests,
  rbacManifests,
  type Verb,
} from './rbac.ts';
export { jsonEqual, updateStatusIfChanged } from './status.ts';
