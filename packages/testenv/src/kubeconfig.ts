/**
 * @module kubeconfig
 * Kubeconfig documents for the environment: one cluster, one user (client certificate or bearer token), one context.
 * Written as JSON, which every kubeconfig reader (kubectl, client-go, @kubernetes/client-node) accepts, with mode 0600,
 * and atomically (a reader in another process, e.g. a test file on a shared control plane, never sees half a file).
 */
import { randomBytes } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export interface KubeconfigUser {
  readonly 'client-certificate-data'?: string;
  readonly 'client-key-data'?: string;
  readonly token?: string;
}

/**
 * A kubeconfig document with one cluster, one user and one context, as the environment writes it (JSON, which every
 * kubeconfig reader accepts).
 */
export interface Kubeconfig {
  /** Always `v1`. */
  readonly apiVersion: 'v1';
  /** Always `Config`. */
  readonly kind: 'Config';
  /** The one cluster: the apiserver's URL and its CA (base64 PEM). */
  readonly clusters: readonly { name: string; cluster: { server: string; 'certificate-authority-data': string } }[];
  /** The one user, with a client certificate or a bearer token. */
  readonly users: readonly { name: string; user: KubeconfigUser }[];
  /** The one context, joining them (with a namespace, when one was given). */
  readonly contexts: readonly { name: string; context: { cluster: string; user: string; namespace?: string } }[];
  /** The context's name. */
  readonly 'current-context': string;
}

export type Credentials =
  | { readonly kind: 'certificate'; readonly certPem: string; readonly keyPem: string }
  | { readonly kind: 'token'; readonly token: string };

export interface KubeconfigSpec {
  readonly name: string;
  readonly server: string;
  readonly caPem: string;
  readonly user: string;
  readonly credentials: Credentials;
  readonly namespace?: string;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

export function makeKubeconfig(spec: KubeconfigSpec): Kubeconfig {
  const user: KubeconfigUser =
    spec.credentials.kind === 'certificate'
      ? { 'client-certificate-data': b64(spec.credentials.certPem), 'client-key-data': b64(spec.credentials.keyPem) }
      : { token: spec.credentials.token };
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: spec.name, cluster: { server: spec.server, 'certificate-authority-data': b64(spec.caPem) } }],
    users: [{ name: spec.user, user }],
    contexts: [
      {
        name: spec.name,
        context: { cluster: spec.name, user: spec.user, ...(spec.namespace ? { namespace: spec.namespace } : {}) },
      },
    ],
    'current-context': spec.name,
  };
}

/**
 * Writes `config` to `path` whole: into a file beside it first, named with a leading dot (a folder of kubeconfigs read
 * by `kubeconfigFolder` skips it), then renamed over `path`.
 */
export async function writeKubeconfig(path: string, config: Kubeconfig): Promise<void> {
  const partial = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.partial`);
  await writeFile(partial, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await rename(partial, path);
}
