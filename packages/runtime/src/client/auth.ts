/**
 * @module client/auth
 * The authenticators a connection config carries: the credentials each request is sent with, and how they are
 * re-read when they rotate. Static credentials (a bearer token, basic auth, a client certificate), a token file (the
 * in-cluster service account's, or a kubeconfig's `tokenFile`), an `exec` credential plugin
 * (client.authentication.k8s.io ExecCredential), and legacy `auth-provider` users delegated to
 * @kubernetes/client-node, an optional peer dependency (loaded only then: it costs ~85 MB of RSS, which every other
 * operator does not pay; a kubeconfig that needs it when it is not installed fails with `AuthProviderNotInstalled`).
 *
 * Guarantees: a token file is re-read at most once a minute, and at the next request after `invalidate()` (the
 * transport calls it on a 401). An exec plugin runs once at a time (concurrent requests wait for the same run), with
 * `KUBERNETES_EXEC_INFO` set and a 60 s limit; its credentials are cached until 10 s before they expire (for good when
 * they name no expiry) or until `invalidate()`. A plugin that fails, prints no ExecCredential JSON, or returns neither
 * a token nor a client certificate fails the request with `KubeconfigError` naming the command.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, sep } from 'node:path';
import { KubeconfigError } from './kubeconfig.ts';

/** Credentials to attach to one request. */
export interface Credentials {
  /** Headers to send, e.g. `Authorization`. */
  readonly headers: Readonly<Record<string, string>>;
  /** A client certificate to present (PEM). */
  readonly cert?: string;
  /** The client certificate's private key (PEM). */
  readonly key?: string;
}

/** The source of a connection's credentials: what to send with each request, re-read when they rotate. */
export interface Authenticator {
  /** The credentials of the next request (cached while they are valid). */
  credentials(): Promise<Credentials>;
  /** Forget cached credentials (after a 401). */
  invalidate(): void;
}

/** A kubeconfig user's `exec` section. */
export interface ExecConfig {
  command?: string;
  args?: string[];
  env?: { name: string; value: string }[] | null;
  apiVersion?: string;
}

/** A client certificate and key, both or neither. */
type Tls = { cert?: string; key?: string };

/** Credentials that never change. */
export function staticAuth(creds: Credentials): Authenticator {
  return { credentials: async () => creds, invalidate: () => {} };
}

/** A bearer token read from `path` (re-read every minute, and after `invalidate()`), with the client certificate. */
export function tokenFileAuth(path: string, tls: Tls): Authenticator {
  let cached: { creds: Credentials; at: number } | undefined;
  return {
    async credentials() {
      if (cached && Date.now() - cached.at < 60_000) return cached.creds;
      const token = (await readFile(path, 'utf8')).trim();
      cached = { creds: { headers: { authorization: `Bearer ${token}` }, ...tls }, at: Date.now() };
      return cached.creds;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

interface ExecCredentialStatus {
  token?: string;
  clientCertificateData?: string;
  clientKeyData?: string;
  expirationTimestamp?: string;
}

/**
 * The credentials of an exec plugin (user `userName` of the kubeconfig `file`, whose folder is `base`): a command
 * with a path separator is relative to `base`, a bare name is looked up on PATH (as client-go does).
 */
export function execAuth(file: string, userName: string, exec: ExecConfig, tls: Tls, base: string): Authenticator {
  if (!exec.command) throw new KubeconfigError(`${file}: users[${userName}].exec.command is missing`);
  const command =
    !isAbsolute(exec.command) && (exec.command.includes('/') || exec.command.includes(sep))
      ? join(base, exec.command)
      : exec.command;
  let cached: { creds: Credentials; expires: number } | undefined;
  let pending: Promise<Credentials> | undefined;
  const run = async (): Promise<Credentials> => {
    const status = await runPlugin(command, userName, exec);
    const creds: Credentials = {
      headers: status.token ? { authorization: `Bearer ${status.token}` } : {},
      ...tls,
      ...(status.clientCertificateData ? { cert: status.clientCertificateData } : {}),
      ...(status.clientKeyData ? { key: status.clientKeyData } : {}),
    };
    const expires = status.expirationTimestamp
      ? Date.parse(status.expirationTimestamp) - 10_000
      : Number.POSITIVE_INFINITY;
    cached = { creds, expires };
    return creds;
  };
  return {
    async credentials() {
      if (cached && Date.now() < cached.expires) return cached.creds;
      pending ??= run().finally(() => {
        pending = undefined;
      });
      return pending;
    },
    invalidate() {
      cached = undefined;
    },
  };
}

/** Runs the plugin once; resolves with the status of its ExecCredential (a token or a client certificate). */
async function runPlugin(command: string, userName: string, exec: ExecConfig): Promise<ExecCredentialStatus> {
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KUBERNETES_EXEC_INFO: JSON.stringify({ apiVersion, kind: 'ExecCredential', spec: { interactive: false } }),
  };
  for (const e of exec.env ?? []) env[e.name] = e.value;
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(command, exec.args ?? [], { env, timeout: 60_000, maxBuffer: 1 << 20 }, (err, out, errOut) => {
      if (err)
        reject(
          new KubeconfigError(
            `exec credential plugin "${command}" of user "${userName}" failed: ${errOut || err.message}`,
            {
              cause: err,
            },
          ),
        );
      else resolve(out);
    });
  });
  let status: ExecCredentialStatus | undefined;
  try {
    status = (JSON.parse(stdout) as { status?: ExecCredentialStatus }).status;
  } catch (err) {
    throw new KubeconfigError(`exec credential plugin "${command}" printed no ExecCredential JSON`, { cause: err });
  }
  if (!status?.token && !status?.clientCertificateData) {
    throw new KubeconfigError(`exec credential plugin "${command}" returned neither a token nor a client certificate`);
  }
  return status;
}

/** The optional peer dependency the legacy auth providers are delegated to. */
export const CLIENT_NODE = '@kubernetes/client-node';

/** Whether `specifier` can be imported from here, without loading it. */
function installed(specifier: string): boolean {
  try {
    import.meta.resolve(specifier);
    return true;
  } catch {
    return false;
  }
}

/**
 * Legacy auth providers (user `where` of the kubeconfig, e.g. `~/.kube/config: users[me].auth-provider`): delegated to
 * @kubernetes/client-node, an optional peer dependency imported only when such a user is configured.
 *
 * @throws KubeconfigError (`AuthProviderNotInstalled`) when `isInstalled` says the package cannot be imported.
 */
export function authProviderAuth(
  docs: { raw: string }[],
  contextName: string,
  where: string,
  isInstalled: (specifier: string) => boolean = installed,
): Authenticator {
  if (!isInstalled(CLIENT_NODE)) {
    throw new KubeconfigError(
      `${where}: a legacy auth-provider needs ${CLIENT_NODE}, which is not installed: run \`npm install ${CLIENT_NODE}\`, or give the user an exec credential plugin`,
      { code: 'AuthProviderNotInstalled' },
    );
  }
  return {
    async credentials() {
      const { KubeConfig } = await import('@kubernetes/client-node');
      const kc = new KubeConfig();
      kc.loadFromString(docs[0]?.raw ?? '');
      kc.setCurrentContext(contextName);
      const opts: { headers?: Record<string, string> } = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) headers[k.toLowerCase()] = String(v);
      return { headers };
    },
    invalidate: () => {},
  };
}
