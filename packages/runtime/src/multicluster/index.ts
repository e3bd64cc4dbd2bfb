/**
 * @module @opkit/runtime/multicluster
 * One operator, many clusters: `mgr.fleet({ provider, setup })` engages each member cluster a provider reports with
 * the controllers `setup(member)` builds for it, and disengages it when it goes. Providers: `kubeconfigFolder` (a
 * folder of kubeconfig files, watched), `kubeconfigSecrets` (kubeconfig Secrets in the hub, opkit's or Cluster API's
 * layout), `staticClusters`, or your own `ClusterProvider`. With sharding, the members are spread over the replicas
 * by the hash of their name (`clusterShard`).
 */
export { FLEET_COPY_LABEL, FLEET_COPY_SOURCE, fleetCopies, fleetCopyMetadata, isFleetCopy } from './copies.ts';
export { FleetError, type FleetErrorCode } from './errors.ts';
export type { Fleet, FleetClusterStatus, FleetOptions } from './fleet.ts';
export type { FleetMember, MemberState } from './member.ts';
export {
  type ClusterEntry,
  type ClusterProvider,
  type ClusterReport,
  type FolderOptions,
  kubeconfigFolder,
  type ProviderContext,
  staticClusters,
} from './provider.ts';
export { kubeconfigSecrets, type SecretsOptions } from './secrets.ts';
export { clusterShard, FLEET_RING } from './spread.ts';
