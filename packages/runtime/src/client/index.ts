/**
 * @module @opkit/runtime/client
 * Talking to the apiserver: `Client` (typed CRUD, patch kinds, server-side apply, status/scale subresources, paginated
 * lists, watches), `loadConfig` (kubeconfig or in-cluster), `Applier` for manifests, `kindFor` (the kind of an
 * apiVersion and kind named at run time, by discovery), label selectors, and the
 * resource descriptions and object helpers, `toApiError` (a Status as the `ApiError` the client throws), and the
 * apiserver's warnings (`onWarning`, `loggedOnce`).
 * `ApiError` and all its predicates (`isNotFound`, `isConflict`, `isAlreadyExists`, `isGone`, …) live in
 * `@opkit/runtime`; the built-in kinds in `@opkit/runtime/kinds`.
 */
export { Applier, ManifestError, type ManifestErrorCode, parseManifests } from './apply.ts';
export type { Credentials } from './auth.ts';
export { Client } from './client.ts';
export { DiscoveryError, type DiscoveryErrorCode, kindFor } from './discover.ts';
export { type Status, type StatusCause, toApiError } from './errors.ts';
export {
  type ConnectionConfig,
  type Impersonation,
  KubeconfigError,
  type KubeconfigErrorCode,
  type LoadOptions,
  loadConfig,
  loadInCluster,
} from './kubeconfig.ts';
export { type KubeconfigTextOptions, kubeconfigFromText } from './kubeconfig-text.ts';
export {
  type LabelSelector,
  parseSelector,
  Selector,
  SelectorError,
  type SelectorErrorCode,
  type SelectorInput,
} from './labels.ts';
export {
  type ApiObject,
  type Kind,
  keyOf,
  metadataOnly,
  type ObjectMeta,
  type ObjectRef,
  type OwnerReference,
  objectKey,
  type PartialObjectMetadata,
  parseKey,
  type ResourceDefinition,
  refOf,
  resource,
  resourceId,
  type Wire,
} from './resource.ts';
export type {
  APIResource,
  ApplyOptions,
  ClientOptions,
  DeleteOptions,
  FieldValidation,
  ListOptions,
  ObjectList,
  PatchOptions,
  PatchType,
  ScaleObject,
  WriteOptions,
} from './types.ts';
export { loggedOnce, type WarningHandler } from './warnings.ts';
export type { WatchEvent, WatchEventType } from './watch.ts';
