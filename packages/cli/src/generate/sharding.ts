/**
 * @module generate/sharding
 * What running the operator sharded needs beyond the default install (docs/sharding.md): RBAC — `<name>-sharding`,
 * a Role for its member and fence Leases (list and delete too) in the Lease namespace and a ClusterRole with `patch`
 * on the project's kinds (a new object gets its shard label) and on the kinds its controllers create (a child gets its
 * owner's back), each bound to the operator's ServiceAccount — and the
 * manager's `--sharding` flag on 3 replicas. As `config/sharding/`, a kustomize Component (add `../sharding` to
 * `components:` in config/default) and, in the chart, `templates/sharding.yaml` under `sharding.enabled`.
 * GUARANTEES: nothing here is in the default install: an operator that is not sharded is granted nothing more.
 */
import type { KubeObject } from '@opkit/runtime';
import { rbacManifests } from '@opkit/runtime/helpers';
import { shardingPermissions } from '@opkit/runtime/sharding';
import type { Project } from '../project/project.ts';
import type { LoadedApi } from './manifests.ts';

/** Replicas of the sharded Deployment in config/sharding/ (the chart takes `replicas`). */
export const SHARDED_REPLICAS = 3;

/** The Role, RoleBinding, ClusterRole and ClusterRoleBinding `<name>-sharding`, bound to the operator's account. */
export function shardingRbacObjects(p: Project, apis: readonly LoadedApi[]): KubeObject[] {
  const name = `${p.projectName}-sharding`;
  const kinds = apis.map((a) => a.kind);
  const r = rbacManifests(
    name,
    p.namespace,
    shardingPermissions(
      kinds,
      apis.flatMap((a) => a.permissions),
    ),
  );
  const subjects = [{ kind: 'ServiceAccount', name: p.projectName, namespace: p.namespace }];
  const bound = <T extends KubeObject>(o: T | undefined): T[] => (o ? [{ ...o, subjects }] : []);
  return [...(r.role ? [r.role] : []), ...bound(r.roleBinding), r.clusterRole, ...bound(r.clusterRoleBinding)];
}

/** config/sharding/kustomization.yaml: a Component with the RBAC and the Deployment's `--sharding` on 3 replicas. */
export function shardingComponent(p: Project): object {
  return {
    apiVersion: 'kustomize.config.k8s.io/v1alpha1',
    kind: 'Component',
    resources: ['rbac.yaml'],
    patches: [
      {
        target: { kind: 'Deployment', name: p.projectName },
        patch: [
          { op: 'replace', path: '/spec/replicas', value: SHARDED_REPLICAS },
          { op: 'add', path: '/spec/template/spec/containers/0/args/-', value: '--sharding' },
        ]
          .map((o) => `- ${JSON.stringify(o)}`)
          .join('\n'),
      },
    ],
  };
}
