/**
 * @module service-account
 * Kubeconfigs that authenticate as a ServiceAccount, for least-privilege tests: the account is created if missing and
 * gets a bound token from the TokenRequest API, so code under test runs with only the permissions RBAC gives it.
 *
 * Guarantees: the kubeconfig is written to the run directory (removed with it) and names the account's namespace; a
 * failed request is `ApiRequestFailed`.
 */
import { join } from 'node:path';
import type { ApiClient } from './api.ts';
import { TestenvError } from './errors.ts';
import { type Kubeconfig, makeKubeconfig, writeKubeconfig } from './kubeconfig.ts';

/** The ServiceAccount `kubeconfigFor` authenticates as. */
export interface ServiceAccountRef {
  /** The ServiceAccount's name. */
  readonly name: string;
  /** Default `default`. */
  readonly namespace?: string;
  /** Token lifetime (default 24 h). */
  readonly expirationSeconds?: number;
}

/** What `kubeconfigFor` made: a kubeconfig written to the run directory, and its token. */
export interface ServiceAccountKubeconfig {
  /** The kubeconfig file, `<dir>/kubeconfig-sa-<namespace>-<name>` (removed with the run directory). */
  readonly path: string;
  /** The same kubeconfig, parsed (its namespace is the ServiceAccount's). */
  readonly kubeconfig: Kubeconfig;
  /** The bound ServiceAccount token (a JWT, valid for `expirationSeconds`). */
  readonly token: string;
  /** The user name the apiserver sees: `system:serviceaccount:<namespace>:<name>`. */
  readonly user: string;
}

/** The cluster a ServiceAccount kubeconfig points at, and where it is written. */
export interface ClusterRef {
  /** The admin client that creates the account and requests its token. */
  readonly api: ApiClient;
  /** The apiserver's URL. */
  readonly server: string;
  /** The CA certificate (PEM) of the apiserver's serving certificate. */
  readonly caPem: string;
  /** The run directory. */
  readonly dir: string;
}

/** Creates the ServiceAccount `sa` if missing, requests a bound token for it and writes a kubeconfig that uses it. */
export async function serviceAccountKubeconfig(
  cluster: ClusterRef,
  sa: ServiceAccountRef,
): Promise<ServiceAccountKubeconfig> {
  const namespace = sa.namespace ?? 'default';
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts`;
  const created = await cluster.api.request({
    method: 'POST',
    path: base,
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa.name, namespace } },
  });
  if (created.status !== 201 && created.status !== 409) {
    throw new TestenvError('ApiRequestFailed', `creating ServiceAccount ${namespace}/${sa.name}: ${created.text}`);
  }
  const tr = await cluster.api.must<{ status: { token: string } }>({
    method: 'POST',
    path: `${base}/${encodeURIComponent(sa.name)}/token`,
    body: {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: sa.expirationSeconds ?? 86_400 },
    },
  });
  const user = `system:serviceaccount:${namespace}:${sa.name}`;
  const kubeconfig = makeKubeconfig({
    name: 'opkit-testenv',
    server: cluster.server,
    caPem: cluster.caPem,
    user,
    namespace,
    credentials: { kind: 'token', token: tr.status.token },
  });
  const path = join(cluster.dir, `kubeconfig-sa-${namespace}-${sa.name}`);
  await writeKubeconfig(path, kubeconfig);
  return { path, kubeconfig, token: tr.status.token, user };
}
