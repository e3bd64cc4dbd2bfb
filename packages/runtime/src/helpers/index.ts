/**
 * @module @opkit/runtime/helpers
 * Building blocks an object-first reconciler's context already applies for you, for request-based reconcilers and
 * other code: Events, finalizers, owner references, adoption errors, conditions, RBAC from permissions, status written
 * only on change. The everyday ones (`claimChildren`, `setCondition`, `getCondition`, `permission`) live in
 * `@opkit/runtime`.
 */
export { ClaimError, type ClaimErrorCode, type ClaimOptions, type ClaimResult } from './claim.ts';
export {
  type ConditionInput,
  type ConditionStatus,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  removeCondition,
} from './conditions.ts';
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
