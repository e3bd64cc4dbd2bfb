/**
 * @module client/builtins
 * Resource types of the built-in kinds operators use most, typed with `@kubernetes/client-node`'s models in their JSON
 * form. Other kinds: `resource<ApiObject<V1Whatever>>({ … })`.
 */
import type {
  CoreV1Event,
  EventsV1Event as EventsV1EventModel,
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1CustomResourceDefinition,
  V1DaemonSet,
  V1Deployment,
  V1Job,
  V1Lease,
  V1Namespace,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ReplicaSet,
  V1Role,
  V1RoleBinding,
  V1Scale,
  V1Secret,
  V1Service,
  V1ServiceAccount,
  V1StatefulSet,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import { type ApiObject, resource } from './resource.ts';

/** A v1 Pod in its JSON form (`V1Pod` of `@kubernetes/client-node`). */
export type Pod = ApiObject<V1Pod>;
/** A v1 ConfigMap in its JSON form (`V1ConfigMap` of `@kubernetes/client-node`). */
export type ConfigMap = ApiObject<V1ConfigMap>;
/** A v1 Secret in its JSON form (`V1Secret` of `@kubernetes/client-node`). */
export type Secret = ApiObject<V1Secret>;
/** A v1 Service in its JSON form (`V1Service` of `@kubernetes/client-node`). */
export type Service = ApiObject<V1Service>;
/** A v1 ServiceAccount in its JSON form (`V1ServiceAccount` of `@kubernetes/client-node`). */
export type ServiceAccount = ApiObject<V1ServiceAccount>;
/** A v1 Namespace in its JSON form (`V1Namespace` of `@kubernetes/client-node`). */
export type Namespace = ApiObject<V1Namespace>;
/** A v1 Node in its JSON form (`V1Node` of `@kubernetes/client-node`). */
export type Node = ApiObject<V1Node>;
/** A v1 Event in its JSON form (`CoreV1Event` of `@kubernetes/client-node`), as `kubectl get events` shows it. */
export type Event = ApiObject<CoreV1Event>;
/** An Event of the events.k8s.io/v1 API (what `kubectl events` shows; series instead of count). */
export type EventsV1Event = ApiObject<EventsV1EventModel>;
/** A v1 PersistentVolumeClaim in its JSON form (`V1PersistentVolumeClaim` of `@kubernetes/client-node`). */
export type PersistentVolumeClaim = ApiObject<V1PersistentVolumeClaim>;
/** An apps/v1 Deployment in its JSON form (`V1Deployment` of `@kubernetes/client-node`). */
export type Deployment = ApiObject<V1Deployment>;
/** An apps/v1 ReplicaSet in its JSON form (`V1ReplicaSet` of `@kubernetes/client-node`). */
export type ReplicaSet = ApiObject<V1ReplicaSet>;
/** An apps/v1 StatefulSet in its JSON form (`V1StatefulSet` of `@kubernetes/client-node`). */
export type StatefulSet = ApiObject<V1StatefulSet>;
/** An apps/v1 DaemonSet in its JSON form (`V1DaemonSet` of `@kubernetes/client-node`). */
export type DaemonSet = ApiObject<V1DaemonSet>;
/** A batch/v1 Job in its JSON form (`V1Job` of `@kubernetes/client-node`). */
export type Job = ApiObject<V1Job>;
/** A coordination.k8s.io/v1 Lease in its JSON form (`V1Lease` of `@kubernetes/client-node`). */
export type Lease = ApiObject<V1Lease>;
/** A rbac.authorization.k8s.io/v1 Role in its JSON form (`V1Role` of `@kubernetes/client-node`). */
export type Role = ApiObject<V1Role>;
/** A rbac.authorization.k8s.io/v1 RoleBinding in its JSON form (`V1RoleBinding` of `@kubernetes/client-node`). */
export type RoleBinding = ApiObject<V1RoleBinding>;
/** A rbac.authorization.k8s.io/v1 ClusterRole in its JSON form (`V1ClusterRole` of `@kubernetes/client-node`). */
export type ClusterRole = ApiObject<V1ClusterRole>;
/**
 * A rbac.authorization.k8s.io/v1 ClusterRoleBinding in its JSON form (`V1ClusterRoleBinding` of
 * `@kubernetes/client-node`).
 */
export type ClusterRoleBinding = ApiObject<V1ClusterRoleBinding>;
/**
 * An apiextensions.k8s.io/v1 CustomResourceDefinition in its JSON form (`V1CustomResourceDefinition` of
 * `@kubernetes/client-node`).
 */
export type CustomResourceDefinition = ApiObject<V1CustomResourceDefinition>;
/**
 * An autoscaling/v1 Scale in its JSON form (`V1Scale` of `@kubernetes/client-node`): the scale subresource of a
 * workload or of a custom resource that enables it (`Client.getScale`, `Client.updateScale`).
 */
export type Scale = ApiObject<V1Scale>;
/** An authentication.k8s.io/v1 TokenReview in its JSON form (`V1TokenReview` of `@kubernetes/client-node`). */
export type TokenReview = ApiObject<V1TokenReview>;
/**
 * An authorization.k8s.io/v1 SubjectAccessReview in its JSON form (`V1SubjectAccessReview` of
 * `@kubernetes/client-node`).
 */
export type SubjectAccessReview = ApiObject<V1SubjectAccessReview>;

const core = { group: '', version: 'v1' } as const;
/** The v1 `pods` resource (namespaced), of `Pod` objects. */
export const Pods = resource<Pod>({ ...core, kind: 'Pod', plural: 'pods', namespaced: true });
/** The v1 `configmaps` resource (namespaced), of `ConfigMap` objects. */
export const ConfigMaps = resource<ConfigMap>({ ...core, kind: 'ConfigMap', plural: 'configmaps', namespaced: true });
/** The v1 `secrets` resource (namespaced), of `Secret` objects. */
export const Secrets = resource<Secret>({ ...core, kind: 'Secret', plural: 'secrets', namespaced: true });
/** The v1 `services` resource (namespaced), of `Service` objects. */
export const Services = resource<Service>({ ...core, kind: 'Service', plural: 'services', namespaced: true });
/** The v1 `serviceaccounts` resource (namespaced), of `ServiceAccount` objects. */
export const ServiceAccounts = resource<ServiceAccount>({
  ...core,
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  namespaced: true,
});
/** The v1 `namespaces` resource (cluster-scoped), of `Namespace` objects. */
export const Namespaces = resource<Namespace>({ ...core, kind: 'Namespace', plural: 'namespaces', namespaced: false });
/** The v1 `nodes` resource (cluster-scoped), of `Node` objects. */
export const Nodes = resource<Node>({ ...core, kind: 'Node', plural: 'nodes', namespaced: false });
/** The v1 `events` resource (namespaced), of `Event` objects. */
export const Events = resource<Event>({ ...core, kind: 'Event', plural: 'events', namespaced: true });
/** The events.k8s.io/v1 `events` resource (namespaced), of `EventsV1Event` objects. */
export const EventsV1Events = resource<EventsV1Event>({
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  namespaced: true,
});
/** The v1 `persistentvolumeclaims` resource (namespaced), of `PersistentVolumeClaim` objects. */
export const PersistentVolumeClaims = resource<PersistentVolumeClaim>({
  ...core,
  kind: 'PersistentVolumeClaim',
  plural: 'persistentvolumeclaims',
  namespaced: true,
});
const apps = { group: 'apps', version: 'v1', namespaced: true } as const;
/** The apps/v1 `deployments` resource (namespaced), of `Deployment` objects. */
export const Deployments = resource<Deployment>({ ...apps, kind: 'Deployment', plural: 'deployments' });
/** The apps/v1 `replicasets` resource (namespaced), of `ReplicaSet` objects. */
export const ReplicaSets = resource<ReplicaSet>({ ...apps, kind: 'ReplicaSet', plural: 'replicasets' });
/** The apps/v1 `statefulsets` resource (namespaced), of `StatefulSet` objects. */
export const StatefulSets = resource<StatefulSet>({ ...apps, kind: 'StatefulSet', plural: 'statefulsets' });
/** The apps/v1 `daemonsets` resource (namespaced), of `DaemonSet` objects. */
export const DaemonSets = resource<DaemonSet>({ ...apps, kind: 'DaemonSet', plural: 'daemonsets' });
/** The batch/v1 `jobs` resource (namespaced), of `Job` objects. */
export const Jobs = resource<Job>({ group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true });
/** The coordination.k8s.io/v1 `leases` resource (namespaced), of `Lease` objects. */
export const Leases = resource<Lease>({
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
  namespaced: true,
});
const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' } as const;
/** The rbac.authorization.k8s.io/v1 `roles` resource (namespaced), of `Role` objects. */
export const Roles = resource<Role>({ ...rbac, kind: 'Role', plural: 'roles', namespaced: true });
/** The rbac.authorization.k8s.io/v1 `rolebindings` resource (namespaced), of `RoleBinding` objects. */
export const RoleBindings = resource<RoleBinding>({
  ...rbac,
  kind: 'RoleBinding',
  plural: 'rolebindings',
  namespaced: true,
});
/** The rbac.authorization.k8s.io/v1 `clusterroles` resource (cluster-scoped), of `ClusterRole` objects. */
export const ClusterRoles = resource<ClusterRole>({
  ...rbac,
  kind: 'ClusterRole',
  plural: 'clusterroles',
  namespaced: false,
});
/**
 * The rbac.authorization.k8s.io/v1 `clusterrolebindings` resource (cluster-scoped), of `ClusterRoleBinding` objects.
 */
export const ClusterRoleBindings = resource<ClusterRoleBinding>({
  ...rbac,
  kind: 'ClusterRoleBinding',
  plural: 'clusterrolebindings',
  namespaced: false,
});
/**
 * The apiextensions.k8s.io/v1 `customresourcedefinitions` resource (cluster-scoped), of `CustomResourceDefinition`
 * objects.
 */
export const CustomResourceDefinitions = resource<CustomResourceDefinition>({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
});
/** The authentication.k8s.io/v1 `tokenreviews` resource (cluster-scoped), of `TokenReview` objects. */
export const TokenReviews = resource<TokenReview>({
  group: 'authentication.k8s.io',
  version: 'v1',
  kind: 'TokenReview',
  plural: 'tokenreviews',
  namespaced: false,
});
/** The authorization.k8s.io/v1 `subjectaccessreviews` resource (cluster-scoped), of `SubjectAccessReview` objects. */
export const SubjectAccessReviews = resource<SubjectAccessReview>({
  group: 'authorization.k8s.io',
  version: 'v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  namespaced: false,
});
