/**
 * @module @opkit/testenv
 * A real local Kubernetes control plane for tests and demos.
 *
 * `start()` runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (simulated nodes, so pods are
 * scheduled and become Running and Ready) on 127.0.0.1 with free ports, and returns an `Environment` with an admin
 * kubeconfig, `kubeconfigFor(serviceAccount)` for least-privilege tests, volumes (the default StorageClass
 * `standard` and `standard-immediate`, `STORAGE_CLASSES`), `restart(component)` for fault tests, and
 * `stop()`. `shareEnvironment` and `sharedEnvironment()` share one control plane across the files of a `node --test`
 * run; `startFleet` starts a hub and named members, with a folder of their kubeconfigs (a local fleet). Binaries come from an explicit directory, KUBEBUILDER_ASSETS, the user cache, a verified download of the
 * official releases (or a mirror of them), or a build from Go modules.
 */
export { ApiClient, type ApiRequest, type ApiResponse, type WatchEvent } from './api.ts';
export { type AuditEvent, type AuditLogSlice, auditLogSize, readAuditLog, WRITE_VERBS } from './audit-log.ts';
export {
  type BinaryPaths,
  type BinarySource,
  findGo,
  REQUIRED_COMPONENTS,
  type ResolveOptions,
  resolveBinaries,
} from './binaries.ts';
export { binaryCacheDir, type CacheManifest, readCacheManifest } from './binary-cache.ts';
export { CONTROLLERS, type ComponentId } from './control-plane.ts';
export type { CrdInput } from './crds.ts';
export { Environment, type StartOptions, start } from './environment.ts';
export { isTestenvError, TestenvError, type TestenvErrorCode } from './errors.ts';
export { resetSocket } from './fault-link.ts';
export { type FaultMode, FaultProxy, type FaultProxyOptions, type FaultProxyStats, targetOf } from './fault-proxy.ts';
export { type FleetEnvironment, type FleetStartOptions, startFleet } from './fleet.ts';
export { HELM_VERSION, type HelmOptions, helmCacheDir, resolveHelm } from './helm.ts';
export type { Kubeconfig } from './kubeconfig.ts';
export { EXIT_CODE_ANNOTATION } from './kwok-exit-stage.ts';
export { type LockOptions, withLock } from './lock.ts';
export { type MirrorEntry, writeMirror } from './mirror.ts';
export { cacheRoot } from './paths.ts';
export { isProcessAlive } from './process.ts';
export { type ReleasePlatform, releasePlatform } from './release.ts';
export { type EnvironmentState, reapStale } from './run-dir.ts';
export type { ServiceAccountKubeconfig, ServiceAccountRef } from './service-account.ts';
export {
  type GlobalSetup,
  SHARED_ENVIRONMENT_VARIABLE,
  SharedEnvironment,
  sharedEnvironment,
  shareEnvironment,
} from './shared.ts';
export { ETCD_VERSION, KUBERNETES_VERSION, KWOK_VERSION } from './versions.ts';
export { HOST_PATH_PROVISIONER, HOST_PATH_VOLUME_ROOT, removeVolumeDirs, STORAGE_CLASSES } from './volumes.ts';
export { waitFor } from './wait.ts';
export {
  type InstalledWebhooks,
  type InstallWebhooksOptions,
  installWebhooks,
  type WebhookServingCertificate,
} from './webhooks.ts';
