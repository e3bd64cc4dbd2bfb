/**
 * @module client/builtins
 * Resource types of the built-in kinds operators use most, typed with @kubernetes/client-node's models in their JSON
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

export type Pod = ApiObject<V1Pod>;
export type ConfigMap = ApiObject<V1ConfigMap>;
export type Secret = ApiObject<V1Secret>;
export type Service = ApiObject<V1Service>;
export type ServiceAccount = ApiObject<V1ServiceAccount>;
export type Namespace = ApiObject<V1Namespace>;
export type Node = ApiObject<V1Node>;
export type Event = ApiObject<CoreV1Event>;
/** An Event of the events.k8s.io/v1 API (what `kubectl events` shows; series instead of count). */
export type EventsV1Event = ApiObject<EventsV1EventModel>;
export type PersistentVolumeClaim = ApiObject<V1PersistentVolumeClaim>;
export type Deployment = ApiObject<V1Deployment>;
export type ReplicaSet = ApiObject<V1ReplicaSet>;
export type StatefulSet = ApiObject<V1StatefulSet>;
export type DaemonSet = ApiObject<V1DaemonSet>;
export type Job = ApiObject<V1Job>;
export type Lease = ApiObject<V1Lease>;
export type Role = ApiObject<V1Role>;
export type RoleBinding = ApiObject<V1RoleBinding>;
export type ClusterRole = ApiObject<V1ClusterRole>;
export type ClusterRoleBinding = ApiObject<V1ClusterRoleBinding>;
export type CustomResourceDefinition = ApiObject<V1CustomResourceDefinition>;
export type Scale = ApiObject<V1Scale>;
export type TokenReview = ApiObject<V1TokenReview>;
export type SubjectAccessReview = ApiObject<V1SubjectAccessReview>;

const core = { group: '', version: 'v1' } as const;
export const Pods = resource<Pod>({ ...core, kind: 'Pod', plural: 'pods', namespaced: true });
export const ConfigMaps = resource<ConfigMap>({ ...core, kind: 'ConfigMap', plural: 'configmaps', namespaced: true });
export const Secrets = resource<Secret>({ ...core, kind: 'Secret', plural: 'secrets', namespaced: true });
export const Services = resource<Service>({ ...core, kind: 'Service', plural: 'services', namespaced: true });
export const ServiceAccounts = resource<ServiceAccount>({
  ...core,
  kind: 'ServiceAccount',
  plural: 'serviceaccounts',
  namespaced: true,
});
export const Namespaces = resource<Namespace>({ ...core, kind: 'Namespace', plural: 'namespaces', namespaced: false });
export const Nodes = resource<Node>({ ...core, kind: 'Node', plural: 'nodes', namespaced: false });
export const Events = resource<Event>({ ...core, kind: 'Event', plural: 'events', namespaced: true });
export const EventsV1Events = resource<EventsV1Event>({
  group: 'events.k8s.io',
  version: 'v1',
  kind: 'Event',
  plural: 'events',
  namespaced: true,
});
export const PersistentVolumeClaims = resource<PersistentVolumeClaim>({
  ...core,
  kind: 'PersistentVolumeClaim',
  plural: 'persistentvolumeclaims',
  namespaced: true,
});
const apps = { group: 'apps', version: 'v1', namespaced: true } as const;
export const Deployments = resource<Deployment>({ ...apps, kind: 'Deployment', plural: 'deployments' });
export const ReplicaSets = resource<ReplicaSet>({ ...apps, kind: 'ReplicaSet', plural: 'replicasets' });
export const StatefulSets = resource<StatefulSet>({ ...apps, kind: 'StatefulSet', plural: 'statefulsets' });
export const DaemonSets = resource<DaemonSet>({ ...apps, kind: 'DaemonSet', plural: 'daemonsets' });
export const Jobs = resource<Job>({ group: 'batch', version: 'v1', kind: 'Job', plural: 'jobs', namespaced: true });
export const Leases = resource<Lease>({
  group: 'coordination.k8s.io',
  version: 'v1',
  kind: 'Lease',
  plural: 'leases',
  namespaced: true,
});
const rbac = { group: 'rbac.authorization.k8s.io', version: 'v1' } as const;
export const Roles = resource<Role>({ ...rbac, kind: 'Role', plural: 'roles', namespaced: true });
export const RoleBindings = resource<RoleBinding>({
  ...rbac,
  kind: 'RoleBinding',
  plural: 'rolebindings',
  namespaced: true,
});
export const ClusterRoles = resource<ClusterRole>({
  ...rbac,
  kind: 'ClusterRole',
  plural: 'clusterroles',
  namespaced: false,
});
export const ClusterRoleBindings = resource<ClusterRoleBinding>({
  ...rbac,
  kind: 'ClusterRoleBinding',
  plural: 'clusterrolebindings',
  namespaced: false,
});
export const CustomResourceDefinitions = resource<CustomResourceDefinition>({
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
});
export const TokenReviews = resource<TokenReview>({
  group: 'authentication.k8s.io',
  version: 'v1',
  kind: 'TokenReview',
  plural: 'tokenreviews',
  namespaced: false,
});
export const SubjectAccessReviews = resource<SubjectAccessReview>({
  group: 'authorization.k8s.io',
  version: 'v1',
  kind: 'SubjectAccessReview',
  plural: 'subjectaccessreviews',
  namespaced: false,
});
