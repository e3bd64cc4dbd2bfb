/**
 * @module chaos/rbac
 * The operator's RBAC on the chaos run's control plane: its ServiceAccount, roles and bindings applied (their
 * namespaces first), then a wait until the apiserver's authorizer allows what each role's first rule grants.
 *
 * Guarantees: `installRbac` resolves only once the roles are in effect, so a Forbidden answer later is the operator's
 * own; RBAC without exactly one ServiceAccount, or a role that never takes effect (not bound to it), is a
 * `ChaosInput` error that says so. `authorizes` asks the authorizer again, once settled, whether a request it refused
 * is allowed now: right after an apiserver starts, its RBAC authorizer refuses what it has not loaded yet.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Environment } from '../environment.ts';
import { TestenvError } from '../errors.ts';
import type { Manifest, Objects } from './objects.ts';
import type { RequestInfo } from './request-info.ts';

/**
 * Applies the RBAC objects (their namespaces first) and waits until the authorizer allows what each role's first rule
 * grants; resolves to the one ServiceAccount.
 */
export async function installRbac(env: Environment, objects: Objects, rbac: readonly Manifest[]) {
  const accounts = rbac.filter((o) => o.kind === 'ServiceAccount');
  const sa = accounts[0];
  if (accounts.length !== 1 || sa?.metadata.name === undefined || sa.metadata.namespace === undefined)
    throw new TestenvError(
      'ChaosInput',
      `the operator's RBAC must hold exactly one ServiceAccount with a name and namespace (config/rbac/service_account.yaml), found ${accounts.length}`,
    );
  const namespaces = new Set(rbac.flatMap((o) => (o.metadata.namespace ? [o.metadata.namespace] : [])));
  for (const ns of namespaces)
    await objects.apply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, 'the RBAC');
  for (const o of rbac) await objects.apply(o, 'the RBAC');
  const user = `system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`;
  for (const role of rbac.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole'))
    await effective(env, user, role);
  return { namespace: sa.metadata.namespace, name: sa.metadata.name, user };
}

interface Rule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs?: readonly string[];
}

/** Waits (up to 10 s) until a SubjectAccessReview allows `user` the first rule of `role`. */
async function effective(env: Environment, user: string, role: Manifest): Promise<void> {
  const rule = (role.rules as readonly Rule[] | undefined)?.[0];
  const [group, resource, verb] = [rule?.apiGroups?.[0], rule?.resources?.[0], rule?.verbs?.[0]];
  if (group === undefined || resource === undefined || verb === undefined) return;
  const attributes = {
    group: group === '*' ? '' : group,
    resource: resource === '*' ? 'pods' : resource,
    verb: verb === '*' ? 'get' : verb,
    ...(role.metadata.namespace ? { namespace: role.metadata.namespace } : {}),
  };
  for (let i = 0; i < 100; i++) {
    if (await allowed(env, user, attributes)) return;
    await sleep(100);
  }
  throw new TestenvError(
    'ChaosInput',
    `${role.kind} ${role.metadata.name}: ${user} was still not allowed to ${attributes.verb} ${attributes.resource} 10 s after the RBAC was applied (is it bound to the ServiceAccount?)`,
  );
}

/** Whether the authorizer of `env` allows `user` the request `info` now (a SubjectAccessReview). */
export function authorizes(env: Environment, user: string, info: RequestInfo): Promise<boolean> {
  return allowed(env, user, {
    verb: info.verb,
    group: info.group ?? '',
    resource: info.resource ?? '',
    ...(info.subresource !== undefined ? { subresource: info.subresource } : {}),
    ...(info.namespace !== undefined ? { namespace: info.namespace } : {}),
    ...(info.name !== undefined ? { name: info.name } : {}),
  });
}

/** A SubjectAccessReview of `user` for `attributes`: whether the authorizer allows it now. */
async function allowed(env: Environment, user: string, attributes: Record<string, string>): Promise<boolean> {
  const review = await env.api.must<{ status?: { allowed?: boolean } }>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user, resourceAttributes: attributes },
    },
  });
  return review.status?.allowed === true;
}
