/**
 * @module generate/fleet
 * What the operator's identity must hold in each **member** cluster of its fleet (docs/multicluster.md), from the
 * `memberPermissions` its controller modules export (what their member controllers do there), plus Events (a member
 * controller's `ctx.events` writes them in the member). As `config/fleet/`: the operator's namespace, the
 * ServiceAccount `<name>-member`, its ClusterRole and ClusterRoleBinding (a Role and RoleBinding too for
 * namespace-scoped permissions), and the Secret `<name>-member-token` that asks the member for a token of that
 * account, to put in the kubeconfig the hub reads. Applied in each member (`kubectl apply -k config/fleet`), never in
 * the hub: it is not in config/default nor in dist/install.yaml.
 *
 * Guarantees: nothing is written for a project none of whose controllers exports `memberPermissions`; the member role
 * grants exactly the declared permissions and Events, nothing of the hub's (no Leases: leader election is the hub's).
 */
import type { KubeObject, Permission } from '@opkit/runtime';
import { managerPermissions, rbacManifests } from '@opkit/runtime/helpers';
import type { Project } from '../project/project.ts';

/** The parts of a loaded API this module reads. */
interface WithMemberPermissions {
  /** What the API's member controllers do in a member cluster (the controller module's `memberPermissions`). */
  readonly memberPermissions?: readonly Permission[];
}

/** Where the members' RBAC is written. */
export const MEMBER_RBAC_FILE = 'config/fleet/member-rbac.yaml';

/** The member ServiceAccount's name: `<name>-member`. */
const memberAccount = (p: Project) => `${p.projectName}-member`;

/** Whether some controller declares what it does in member clusters. */
const hasFleet = (apis: readonly WithMemberPermissions[]) => apis.some((a) => a.memberPermissions);

/** The objects of config/fleet/member-rbac.yaml, in apply order (none without a fleet). */
export function memberRbacObjects(p: Project, apis: readonly WithMemberPermissions[]): KubeObject[] {
  if (!hasFleet(apis)) return [];
  const name = memberAccount(p);
  const r = rbacManifests(name, p.namespace, [
    ...apis.flatMap((a) => a.memberPermissions ?? []),
    ...managerPermissions(false), // Events
  ]);
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'opkit' };
  const token = {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/service-account-token',
    metadata: {
      name: `${name}-token`,
      namespace: p.namespace,
      labels,
      annotations: { 'kubernetes.io/service-account.name': name },
    },
  } as KubeObject;
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: p.namespace } } as KubeObject;
  return [
    namespace,
    r.serviceAccount,
    token,
    r.clusterRole,
    r.clusterRoleBinding,
    ...(r.role ? [r.role] : []),
    ...(r.roleBinding ? [r.roleBinding] : []),
  ];
}

/** config/fleet/'s files (none without a fleet): the members' RBAC, rendered by `members`, and its kustomization. */
export function fleetFiles(
  p: Project,
  apis: readonly WithMemberPermissions[],
  render: { members: (objects: KubeObject[]) => string; kustomization: (resources: string[]) => string },
): [string, string][] {
  const objects = memberRbacObjects(p, apis);
  if (objects.length === 0) return [];
  return [
    [MEMBER_RBAC_FILE, render.members(objects)],
    ['config/fleet/kustomization.yaml', render.kustomization(['member-rbac.yaml'])],
  ];
}
