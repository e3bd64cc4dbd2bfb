/**
 * @module install
 * Puts the operator's API and identity into a cluster with opkit's own client (kubectl is not needed): the namespace,
 * the CRD (waiting until it is Established), the ServiceAccount and its least-privilege RBAC — all by server-side
 * apply with field manager `opkit`, so running it again changes nothing. `serviceAccountKubeconfig` makes a
 * kubeconfig that authenticates as the operator's ServiceAccount (a TokenRequest), so a local run has exactly the
 * permissions the Deployment would have.
 */
import { writeFile } from 'node:fs/promises';
import {
  type Client,
  ClusterRoleBindings,
  ClusterRoles,
  type ConnectionConfig,
  CustomResourceDefinitions,
  type KubeObject,
  Namespaces,
  type ResourceType,
  RoleBindings,
  Roles,
  resource,
  ServiceAccounts,
} from '@opkit/runtime';
import { AppServiceKind, AppServices } from './api/v1alpha1/appservice.ts';
import { NAME, NAMESPACE, namespace, rbac, sample } from './manifests.ts';

const FIELD_MANAGER = 'opkit';

async function apply<T extends KubeObject>(client: Client, r: ResourceType<T>, obj: object): Promise<T> {
  return client.apply(r, obj as T, { fieldManager: FIELD_MANAGER, force: true });
}

/** Applies the namespace, CRD and RBAC; resolves once the AppService API is served. */
export async function installApiAndRbac(client: Client, options: { timeoutMs?: number } = {}): Promise<void> {
  await apply(client, Namespaces, namespace());
  await apply(client, CustomResourceDefinitions, AppServiceKind.crd());
  const r = rbac();
  await apply(client, ServiceAccounts, r.serviceAccount);
  await apply(client, ClusterRoles, r.clusterRole);
  await apply(client, ClusterRoleBindings, r.clusterRoleBinding);
  if (r.role) await apply(client, Roles, r.role);
  if (r.roleBinding) await apply(client, RoleBindings, r.roleBinding);
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    const crd = await client.get(CustomResourceDefinitions, { name: `${AppServices.plural}.${AppServices.group}` });
    const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
    if (established) {
      try {
        await client.list(AppServices, { namespace: 'default', pageSize: 1 });
        return;
      } catch {
        // served a moment after Established
      }
    }
    if (Date.now() > deadline)
      throw new Error('the AppService CustomResourceDefinition did not become Established in time');
    await new Promise((res) => setTimeout(res, 200));
  }
}

/** Applies the sample AppService (`example-appservice`, 3 replicas) in `namespace`. */
export async function applySample(client: Client, ns = 'default'): Promise<void> {
  const s = sample() as { metadata: Record<string, unknown> };
  await apply(client, AppServices, { ...s, metadata: { ...s.metadata, namespace: ns } });
}

/**
 * Writes a kubeconfig for the operator's ServiceAccount (token from the TokenRequest API, valid `hours`) next to the
 * cluster connection in `config`, and returns its path.
 */
export async function serviceAccountKubeconfig(
  client: Client,
  config: ConnectionConfig,
  path: string,
  hours = 12,
): Promise<string> {
  type TokenRequest = KubeObject & { spec?: { expirationSeconds?: number }; status?: { token?: string } };
  const tokenRequest = resource<TokenRequest>({
    group: '',
    version: 'v1',
    kind: 'TokenRequest',
    plural: `serviceaccounts/${NAME}/token`,
    namespaced: true,
  });
  const tr = await client.create(tokenRequest, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    metadata: { namespace: NAMESPACE },
    spec: { expirationSeconds: hours * 3600 },
  } as TokenRequest);
  const token = tr.status?.token;
  if (!token) throw new Error('the TokenRequest returned no token');
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'cluster',
        cluster: {
          server: config.server,
          ...(config.ca ? { 'certificate-authority-data': Buffer.from(config.ca).toString('base64') } : {}),
          ...(config.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
          ...(config.tlsServerName ? { 'tls-server-name': config.tlsServerName } : {}),
        },
      },
    ],
    users: [{ name: NAME, user: { token } }],
    contexts: [{ name: NAME, context: { cluster: 'cluster', user: NAME, namespace: NAMESPACE } }],
    'current-context': NAME,
  };
  await writeFile(path, `${JSON.stringify(kubeconfig, null, 2)}\n`, { mode: 0o600 });
  return path;
}
