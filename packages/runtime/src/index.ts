/**
 * @opkit/runtime — controller-runtime for TypeScript.
 *
 * - client: `Client` (typed CRUD, patch kinds, server-side apply, status/scale subresources, paginated lists),
 *   `loadConfig` (kubeconfig / in-cluster), `ApiError` with a `code` per failure, built-in resource types.
 * - cache: `Cache` (shared informers with indexes; reads wait for sync), `Informer`, `Store`.
 * - workqueue: `WorkQueue` and rate limiters, with an injectable clock.
 * - controller: `ControllerBuilder` (`for` / `owns` / `watches` / predicates), `Controller`, the reconcile contract
 *   (`done`, `requeueAfter`, `TerminalError`), expectations (read-your-own-writes).
 * - manager: `Manager` (caches, controllers, leader election, /metrics, /healthz, /readyz, graceful shutdown),
 *   settings from flags and environment.
 * - crd: `defineKind` — a custom resource from a TypeBox schema: its ResourceType, TypeScript type and CRD manifest.
 * - helpers: Events (aggregated, rate limited), finalizers, owner references, adopting and releasing children
 *   (`claimChildren`), conditions, status written only on change.
 * - logger, metrics (controller-runtime's metric names).
 */
export {
  Cache,
  CacheError,
  type CacheErrorCode,
  type CacheListOptions,
  type CacheOptions,
  dropManagedFields,
  type ResourceCacheOptions,
} from './cache/cache.ts';
export { type EventHandler, Informer, type InformerOptions } from './cache/informer.ts';
export { type IndexFunc, indexers, Store } from './cache/store.ts';
// cache (issue 17)
export { keepFields, type Transform } from './cache/transform.ts';
export { Applier, ManifestError, parseManifests } from './client/apply.ts';
export * from './client/builtins.ts';
export {
  type APIResource,
  Client,
  type ClientOptions,
  type DeleteOptions,
  type ListOptions,
  type ObjectList,
  type PatchOptions,
  type PatchType,
  type ScaleObject,
  type WriteOptions,
} from './client/client.ts';
export {
  ApiError,
  type ApiErrorCode,
  isAlreadyExists,
  isApiError,
  isConflict,
  isGone,
  isNotFound,
  isResourceVersionTooLarge,
  type Status,
  type StatusCause,
  toApiError,
} from './client/errors.ts';
export {
  type ConnectionConfig,
  type Credentials,
  type Impersonation,
  KubeconfigError,
  type LoadOptions,
  loadConfig,
  loadInCluster,
} from './client/kubeconfig.ts';
export { type LabelSelector, parseSelector, Selector, SelectorError, type SelectorInput } from './client/labels.ts';
export {
  type ApiObject,
  type KubeObject,
  keyOf,
  type ObjectMeta,
  type ObjectRef,
  type OwnerReference,
  objectKey,
  parseKey,
  type ResourceDefinition,
  type ResourceType,
  refOf,
  resource,
  resourceId,
  type Wire,
} from './client/resource.ts';
export type { WatchEvent, WatchEventType } from './client/watch.ts';
export { type BuilderOptions, ControllerBuilder, type ControllerDeps } from './controller/builder.ts';
export { Controller, ControllerError, type ControllerOptions } from './controller/controller.ts';
export { Expectations } from './controller/expectations.ts';
export { type MapFunc, requestForObject, requestsForOwner } from './controller/handlers.ts';
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
} from './controller/predicates.ts';
export {
  done,
  type Expect,
  isTerminalError,
  type ReconcileContext,
  type ReconcileFunc,
  type Reconciler,
  type Request,
  type Result,
  requeueAfter,
  TerminalError,
} from './controller/reconcile.ts';
export {
  type CustomKind,
  defineKind,
  type KindDefinition,
  type KindObject,
  type PrinterColumn,
  type ValidationRule,
} from './crd/kind.ts';
export { CrdSchemaError, structuralSchema } from './crd/schema.ts';
export { isOpkitError, OpkitError } from './errors.ts';
export {
  ClaimError,
  type ClaimErrorCode,
  type ClaimOptions,
  type ClaimResult,
  claimChildren,
} from './helpers/claim.ts';
export {
  type Condition,
  type ConditionInput,
  type ConditionStatus,
  getCondition,
  isConditionFalse,
  isConditionTrue,
  isConditionUnknown,
  removeCondition,
  setCondition,
} from './helpers/conditions.ts';
export { EventRecorder, type EventRecorderOptions, type EventType } from './helpers/events.ts';
export {
  addFinalizer,
  type FinalizerHandlers,
  finalizer,
  hasFinalizer,
  removeFinalizer,
} from './helpers/finalizers.ts';
export {
  controllerOf,
  isControlledBy,
  OwnerReferenceError,
  type OwnerReferenceErrorCode,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from './helpers/ownerrefs.ts';
// metrics auth
export {
  managerPermissions,
  metricsAuthPermissions,
  metricsReaderClusterRole,
  type Permission,
  type PolicyRule,
  permission,
  policyRules,
  type RbacManifests,
  rbacManifests,
  type Verb,
} from './helpers/rbac.ts';
export { jsonEqual, updateStatusIfChanged } from './helpers/status.ts';
export {
  createLogger,
  type LogFields,
  type Logger,
  type LoggerOptions,
  type LogLevel,
  silentLogger,
} from './logger.ts';
export { type LeaderCallbacks, type LeaderElectionOptions, LeaderElector, microTime } from './manager/leader.ts';
export {
  type LeaderElectionSettings,
  Manager,
  ManagerError,
  type ManagerErrorCode,
  type ManagerOptions,
  type Runnable,
} from './manager/manager.ts';
export {
  bearerToken,
  MetricsAuthError,
  type MetricsAuthErrorCode,
  type ScrapeAuthOptions,
  ScrapeAuthorizer,
  type ScrapeDecision,
  type ScrapeRequest,
  type SubjectAccessReview,
  SubjectAccessReviews,
  type TokenReview,
  TokenReviews,
} from './manager/metricsauth.ts';
export { type MetricsServingOptions, metricsBindAddress } from './manager/metricsserving.ts';
export { type CertificateFiles, type KeyPair, selfSignedCertificate } from './manager/servingcert.ts';
export { parseDuration, SETTINGS_HELP, SettingsError, settingsFromArgs } from './manager/settings.ts';
export { Metrics, type WatchMetrics } from './metrics.ts';
export { Counter, Gauge, Histogram, type Labels, type MetricOptions, Registry } from './prometheus.ts';
export { VERSION } from './version.ts';
export * from './workqueue/index.ts';
