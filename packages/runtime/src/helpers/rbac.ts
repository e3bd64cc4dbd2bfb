/**
 * @module helpers/rbac
 * Least-privilege RBAC from what the code declares it needs. A controller module exports its `permissions`; the
 * manager adds its own (Leases for leader election in its namespace, Events, and the reviews a secure /metrics
 * endpoint makes); `metricsReaderClusterRole` is the role to bind Prometheus to; `rbacManifests` turns them into a
 * ServiceAccount, a ClusterRole + binding (cluster-wide needs) and a Role + binding (needs in the operator's own
 * namespace). Rules are merged and sorted by code unit (never by the machine's locale), so the output is byte-stable
 * on every machine.
 */
import { type ClusterRoleBinding, EventsV1Events, Leases, type RoleBinding } from '../client/builtins.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import { UsageError } from '../errors.ts';

/** A Kubernetes API verb a permission grants. */
export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

/**
 * One thing the operator needs to do: verbs on a resource (or subresource) of a group, cluster-wide or in its own
 * namespace. `permission()` builds one from a kind.
 */
export interface Permission {
  /** The API group, '' for the core group. */
  readonly group: string;
  /** e.g. `pods` or `appservices/status`. */
  readonly resource: string;
  /** The verbs granted. */
  readonly verbs: readonly Verb[];
  /** `cluster` (default): everywhere the operator watches; `namespace`: only the operator's own namespace. */
  readonly scope?: 'cluster' | 'namespace';
  /** Only the objects of these names (RBAC's `resourceNames`); absent: every object of the resource. */
  readonly resourceNames?: readonly string[];
}

/**
 * What the operator needs on kind `r`: `verbs` on its resource, or on `options.subresource` (`status`, `scale`,
 * `finalizers`), everywhere it watches or (`scope: 'namespace'`) only in its own namespace, on every object of it or
 * (`resourceNames`, as kubebuilder's RBAC marker) only on the objects of those names. `opkit generate` turns a
 * controller's exported `permissions` into its RBAC.
 *
 * RBAC checks a name only when the request names one: `get`, `update`, `patch` and `delete` of that object, and a
 * `list` or `watch` that selects it (`fieldSelector: metadata.name=…`); never a `create` (its name is not known when
 * it is authorized) nor a `deletecollection`, which `permission` refuses with names (`UsageError`), as it refuses an
 * empty list or an empty name. An informer lists every object of a kind, so a kind the operator caches needs its
 * `list` and `watch` without names.
 *
 * @example
 * ```ts
 * import { permission } from '@opkit/runtime';
 * import { ConfigMaps, Deployments } from '@opkit/runtime/kinds';
 *
 * export const permissions = [
 *   permission(Deployments, ['list', 'watch', 'create', 'patch']),
 *   permission(Deployments, ['update'], { subresource: 'scale' }),
 *   permission(ConfigMaps, ['get'], { scope: 'namespace' }),
 * ];
 * ```
 */
export function permission(
  r: Kind<KubeObject>,
  verbs: readonly Verb[],
  options: { subresource?: string; scope?: 'cluster' | 'namespace'; resourceNames?: readonly string[] } = {},
): Permission {
  const names = options.resourceNames;
  if (names !== undefined) {
    const what = `permission(${r.kind}, [${verbs.join(', ')}], { resourceNames })`;
    if (names.length === 0 || names.some((n) => typeof n !== 'string' || n === ''))
      throw new UsageError('InvalidArgument', `${what}: resourceNames needs at least one name, and no empty one`);
    const unnamed = verbs.filter((v) => v === 'create' || v === 'deletecollection');
    if (unnamed.length > 0)
      throw new UsageError(
        'InvalidArgument',
        `${what}: RBAC cannot limit ${unnamed.join(' or ')} to names (the request names no object): grant it in a permission without resourceNames`,
      );
  }
  return {
    group: r.group,
    resource: options.subresource ? `${r.plural}/${options.subresource}` : r.plural,
    verbs,
    ...(options.scope ? { scope: options.scope } : {}),
    ...(names ? { resourceNames: [...new Set(names)].sort(byCodeUnit) } : {}),
  };
}

/**
 * What every manager needs: events.k8s.io Events (create, and patch to count a series), and a Lease when leader
 * election is on. (Only an apiserver older than 1.19, without events.k8s.io/v1, needs the same on core `events`.)
 */
export function managerPermissions(leaderElection: boolean): Permission[] {
  return [
    permission(EventsV1Events, ['create', 'patch']),
    ...(leaderElection ? [permission(Leases, ['get', 'create', 'update'], { scope: 'namespace' })] : []),
  ];
}

/**
 * What a sharded manager needs besides `managerPermissions` (see docs/sharding.md): its member and fence Leases
 * (`list` and `delete` too, in its namespace), and `patch` on each primary kind of its controllers, to give a new
 * object its shard label; with the controllers' own `permissions`, `patch` on each kind they create too (their
 * children), to give a child its owner's shard label back, or move it with its owner.
 */
export function shardingPermissions(
  primaryKinds: readonly Kind<KubeObject, unknown>[],
  controllerPermissions: readonly Permission[] = [],
): Permission[] {
  const children = controllerPermissions.filter((p) => !p.resource.includes('/') && p.verbs.includes('create'));
  return [
    permission(Leases, ['get', 'list', 'create', 'update', 'delete'], { scope: 'namespace' }),
    ...primaryKinds.map((k) => permission(k, ['patch'])),
    ...children.map((p): Permission => ({ ...p, verbs: ['patch'] })),
  ];
}

/**
 * What a manager serving /metrics securely needs (the default, see manager/metricsserving.ts): `create` on
 * TokenReviews and SubjectAccessReviews, to authenticate and authorize each scrape.
 */
export function metricsAuthPermissions(): Permission[] {
  return [
    { group: 'authentication.k8s.io', resource: 'tokenreviews', verbs: ['create'] },
    { group: 'authorization.k8s.io', resource: 'subjectaccessreviews', verbs: ['create'] },
  ];
}

/** The ClusterRole `<name>-metrics-reader` (`get` on the non-resource URL /metrics) to bind Prometheus to. */
export function metricsReaderClusterRole(
  name: string,
): KubeObject & { rules: { nonResourceURLs: string[]; verbs: string[] }[] } {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {
      name: `${name}-metrics-reader`,
      labels: { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'opkit' },
    },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  };
}

/** A rule of a Role or ClusterRole (rbac/v1 `PolicyRule`). */
export interface PolicyRule {
  /** The API groups it applies to ('' is the core group). */
  apiGroups: string[];
  /** The resources (and `resource/subresource`s) it applies to. */
  resources: string[];
  /** The verbs it allows. */
  verbs: string[];
  /** Only on the objects of these names (absent: on every object). */
  resourceNames?: string[];
}

const VERB_ORDER: readonly Verb[] = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

/** Merged, sorted rules: one per (group, resource names, verb set), resources and names sorted and deduplicated. */
export function policyRules(perms: readonly Permission[]): PolicyRule[] {
  const SEP = '\u0000';
  const byResource = new Map<string, Set<Verb>>();
  for (const p of perms) {
    if (p.resourceNames !== undefined && p.resourceNames.length === 0)
      throw new UsageError(
        'InvalidArgument',
        `the permission on ${p.resource} has an empty resourceNames: leave it out`,
      );
    const names = [...new Set(p.resourceNames ?? [])].sort(byCodeUnit);
    const key = [p.group, p.resource, ...names].join(SEP);
    const verbs = byResource.get(key) ?? new Set<Verb>();
    for (const v of p.verbs) verbs.add(v);
    byResource.set(key, verbs);
  }
  const byVerbs = new Map<string, { group: string; verbs: Verb[]; resources: string[]; names: string[] }>();
  for (const [key, verbs] of byResource) {
    const [group = '', resource = '', ...names] = key.split(SEP);
    const sorted = VERB_ORDER.filter((v) => verbs.has(v));
    const k = [group, sorted.join(','), ...names].join(SEP);
    const rule = byVerbs.get(k) ?? { group, verbs: sorted, resources: [], names };
    rule.resources.push(resource);
    byVerbs.set(k, rule);
  }
  // by group, first resource, then names (a rule without names keeps the place it had before names existed)
  const key = (r: PolicyRule) => `${r.apiGroups[0]}/${r.resources[0]}${r.resourceNames ? SEP + r.resourceNames : ''}`;
  return [...byVerbs.values()]
    .map((r) => ({
      apiGroups: [r.group],
      resources: r.resources.sort(),
      ...(r.names.length > 0 ? { resourceNames: r.names } : {}),
      verbs: r.verbs,
    }))
    .sort((a, b) => byCodeUnit(key(a), key(b)));
}

/** Orders strings by UTF-16 code unit, as `Array.prototype.sort` does: the same on every machine, whatever its locale. */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The RBAC objects of an operator, as `rbacManifests` builds them. */
export interface RbacManifests {
  /** The ServiceAccount `<name>` in the operator's namespace. */
  readonly serviceAccount: KubeObject;
  /** The ClusterRole `<name>`: the cluster-wide permissions. */
  readonly clusterRole: KubeObject & { rules: PolicyRule[] };
  /** Binds the ClusterRole to the ServiceAccount. */
  readonly clusterRoleBinding: ClusterRoleBinding;
  /**
   * The Role `<name>` in the operator's namespace: the `scope: 'namespace'` permissions; undefined when there are none.
   */
  readonly role: (KubeObject & { rules: PolicyRule[] }) | undefined;
  /** Binds the Role to the ServiceAccount; undefined when there is no Role. */
  readonly roleBinding: RoleBinding | undefined;
}

/** ServiceAccount `<name>`, ClusterRole/Binding `<name>`, Role/Binding `<name>` (in `namespace`) for `perms`. */
export function rbacManifests(name: string, namespace: string, perms: readonly Permission[]): RbacManifests {
  const cluster = policyRules(perms.filter((p) => (p.scope ?? 'cluster') === 'cluster'));
  const local = policyRules(perms.filter((p) => p.scope === 'namespace'));
  const labels = { 'app.kubernetes.io/name': name, 'app.kubernetes.io/managed-by': 'opkit' };
  const subject = [{ kind: 'ServiceAccount', name, namespace }];
  return {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels } },
    clusterRole: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name, labels },
      rules: cluster,
    },
    clusterRoleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: subject,
    },
    role:
      local.length > 0
        ? {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'Role',
            metadata: { name, namespace, labels },
            rules: local,
          }
        : undefined,
    roleBinding:
      local.length > 0
        ? {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name, namespace, labels },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
            subjects: subject,
          }
        : undefined,
  };
}
