/**
 * @module client/kubeconfig
 * Where to connect and how to authenticate. The file is found as controller-runtime finds it: an explicit path, else
 * `$KUBECONFIG` (a list of files; for each name the first file that defines it wins), else the in-cluster service
 * account when running in a pod, else `~/.kube/config`. The file is read the way kubectl reads it: contexts (current
 * or chosen), the context's namespace, CA / client certificates as data or files (paths relative to the file),
 * `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url` (else the environment's HTTPS_PROXY / NO_PROXY, see
 * proxy.ts), bearer `token` and `tokenFile`, basic auth, impersonation (`as`, `as-uid`, `as-groups`,
 * `as-user-extra`), and `exec` credential plugins (client.authentication.k8s.io ExecCredential, cached until shortly
 * before they expire; a command with a path separator is relative to the kubeconfig's folder, a bare name is looked
 * up on PATH). Legacy `auth-provider` users (oidc, gcp, azure) are delegated to @kubernetes/client-node's KubeConfig,
 * an optional peer dependency loaded only then (without it such a kubeconfig fails to load with
 * `AuthProviderNotInstalled`). The authenticators themselves (how each kind of credential is read and cached) are client/auth.ts.
 *
 * Guarantees: credentials that can rotate (token files, in-cluster tokens, exec plugins) are re-read when due and after
 * `invalidate()` (the transport calls it on a 401). Errors name the file and the field to fix. Nothing the kubeconfig
 * asks for is silently ignored: impersonation and proxies are applied to every request.
 */

import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import yaml from 'js-yaml';
import { OpkitError } from '../errors.ts';
import { type Authenticator, authProviderAuth, type ExecConfig, execAuth, staticAuth, tokenFileAuth } from './auth.ts';
import { checkProxyUrl, proxyFor } from './proxy.ts';

/** Why the connection config cannot be loaded. */
export type KubeconfigErrorCode =
  /**
   * The kubeconfig (or in-cluster config) cannot be used: missing, not YAML, a context, cluster or user not defined, a
   * file it names unreadable, a bad proxy URL, or an exec credential plugin that failed. The message names the file
   * and the field to fix.
   */
  | 'InvalidKubeconfig'
  /**
   * The kubeconfig's user authenticates with a legacy `auth-provider` (oidc, gcp, azure), which opkit delegates to
   * @kubernetes/client-node, an optional peer dependency that is not installed: `npm install @kubernetes/client-node`
   * (or give the user an `exec` credential plugin).
   */
  | 'AuthProviderNotInstalled';

/**
 * A kubeconfig (or in-cluster config) that cannot be used (code `InvalidKubeconfig`, or `AuthProviderNotInstalled` for
 * a legacy auth-provider user without @kubernetes/client-node); the message names the file and the field to fix.
 */
export class KubeconfigError extends OpkitError<KubeconfigErrorCode> {
  override readonly name = 'KubeconfigError';

  constructor(message: string, options?: { cause?: unknown; code?: KubeconfigErrorCode }) {
    super(options?.code ?? 'InvalidKubeconfig', message, options);
  }
}

/** Who the requests act as (the apiserver checks that the authenticated user may impersonate them). */
export interface Impersonation {
  /** The user name to act as (`Impersonate-User`). */
  readonly user: string;
  /** The user's UID (`Impersonate-Uid`). */
  readonly uid?: string;
  /** Groups to act as a member of (`Impersonate-Group`). */
  readonly groups?: readonly string[];
  /** Extra user attributes (`Impersonate-Extra-<key>`). */
  readonly extra?: Readonly<Record<string, readonly string[]>>;
}

/**
 * Where to connect and how to authenticate: what `loadConfig` reads from a kubeconfig or the in-cluster service
 * account.
 */
export interface ConnectionConfig {
  /** `https://host:port` (no trailing slash). */
  readonly server: string;
  /** The CA bundle that signs the server's certificate (PEM); the system's CAs when absent. */
  readonly ca?: string;
  /** Do not verify the server's certificate (kubeconfig `insecure-skip-tls-verify`). */
  readonly insecureSkipTlsVerify?: boolean;
  /** The name the server's certificate is checked against, instead of the host of `server` (`tls-server-name`). */
  readonly tlsServerName?: string;
  /**
   * The credentials of every request (token, client certificate, basic auth or exec plugin), re-read when they rotate.
   */
  readonly auth: Authenticator;
  /** Act as this user (kubeconfig `as`, `as-uid`, `as-groups`, `as-user-extra`). */
  readonly impersonate?: Impersonation;
  /** Tunnel through this proxy (`proxy-url`, else HTTPS_PROXY / HTTP_PROXY unless NO_PROXY or loopback). */
  readonly proxyUrl?: string;
  /** The context's namespace (or the in-cluster pod's), default `default`. */
  readonly namespace: string;
  /** The kubeconfig context used, or `in-cluster` (for messages). */
  readonly contextName: string;
}

/** Which kubeconfig `loadConfig` reads (by default the one kubectl would use, or the in-cluster config in a pod). */
export interface LoadOptions {
  /** A kubeconfig file (instead of $KUBECONFIG / ~/.kube/config). */
  readonly path?: string;
  /** A context other than the current one. */
  readonly context?: string;
  /**
   * The environment to read `KUBECONFIG`, `KUBERNETES_SERVICE_HOST` and the proxy variables from (default
   * `process.env`).
   */
  readonly env?: NodeJS.ProcessEnv;
  /** The service account folder of the in-cluster config (default /var/run/secrets/kubernetes.io/serviceaccount). */
  readonly inClusterDir?: string;
}

interface NamedCluster {
  name: string;
  cluster: {
    server?: string;
    'certificate-authority'?: string;
    'certificate-authority-data'?: string;
    'insecure-skip-tls-verify'?: boolean;
    'tls-server-name'?: string;
    'proxy-url'?: string;
  };
}
interface NamedUser {
  name: string;
  user: {
    token?: string;
    tokenFile?: string;
    username?: string;
    password?: string;
    'client-certificate'?: string;
    'client-certificate-data'?: string;
    'client-key'?: string;
    'client-key-data'?: string;
    exec?: ExecConfig;
    'auth-provider'?: { name?: string };
    as?: string;
    'as-uid'?: string;
    'as-groups'?: string[];
    'as-user-extra'?: Record<string, string[]>;
  };
}
interface NamedContext {
  name: string;
  context: { cluster?: string; user?: string; namespace?: string };
}
/** A kubeconfig document as parsed. */
export interface KubeconfigDoc {
  clusters?: NamedCluster[];
  users?: NamedUser[];
  contexts?: NamedContext[];
  'current-context'?: string;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** Loads the connection config as kubectl would (see the module comment). */
export async function loadConfig(options: LoadOptions = {}): Promise<ConnectionConfig> {
  const env = options.env ?? process.env;
  const inPod =
    env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT && inClusterTokenExists(options.inClusterDir);
  if (!options.path && !env.KUBECONFIG && inPod) {
    return loadInCluster(env, options.inClusterDir);
  }
  const files = options.path
    ? [options.path]
    : env.KUBECONFIG
      ? env.KUBECONFIG.split(delimiter).filter((f) => f.length > 0)
      : [join(homedir(), '.kube', 'config')];
  const docs: { file: string; doc: KubeconfigDoc; raw: string }[] = [];
  for (const file of files) {
    let raw: string;
    try {
      raw = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !options.path && files.length > 1) continue;
      throw new KubeconfigError(`cannot read the kubeconfig ${file}: ${(err as Error).message}`, { cause: err });
    }
    let doc: unknown;
    try {
      doc = yaml.load(raw);
    } catch (err) {
      throw new KubeconfigError(`${file} is not valid YAML: ${(err as Error).message.split('\n')[0]}`, { cause: err });
    }
    if (doc === null || doc === undefined) continue;
    if (typeof doc !== 'object' || Array.isArray(doc)) {
      throw new KubeconfigError(`${file} is not a kubeconfig (expected a mapping with clusters, users, contexts)`);
    }
    docs.push({ file, doc: doc as KubeconfigDoc, raw });
  }
  if (docs.length === 0) throw new KubeconfigError(`no kubeconfig found (looked in ${files.join(', ')})`);
  return fromDocs(docs, options.context, env);
}

/** Reads parsed kubeconfig documents (a file each) as kubectl merges them; `file` names each in errors. */
export function fromDocs(
  docs: { file: string; doc: KubeconfigDoc; raw: string }[],
  contextOverride: string | undefined,
  env: NodeJS.ProcessEnv,
): ConnectionConfig {
  const first = <T extends { name: string }>(pick: (d: KubeconfigDoc) => T[] | undefined, name: string) => {
    for (const { file, doc } of docs) {
      const list = pick(doc);
      if (list !== undefined && !Array.isArray(list)) throw new KubeconfigError(`${file}: expected a list`);
      const found = list?.find((x) => x?.name === name);
      if (found) return { file, item: found };
    }
    return undefined;
  };
  const contextName = contextOverride ?? docs.find((d) => d.doc['current-context'])?.doc['current-context'];
  const where = docs.map((d) => d.file).join(', ');
  if (!contextName) throw new KubeconfigError(`${where}: no current-context is set; set one or pass a context`);
  const ctx = first((d) => d.contexts, contextName);
  if (!ctx) throw new KubeconfigError(`${where}: context "${contextName}" is not defined under contexts`);
  const clusterName = ctx.item.context?.cluster;
  const userName = ctx.item.context?.user;
  const cluster = clusterName ? first((d) => d.clusters, clusterName) : undefined;
  if (!cluster) {
    throw new KubeconfigError(
      `${ctx.file}: context "${contextName}" names cluster "${clusterName ?? ''}", which is not defined`,
    );
  }
  const c = cluster.item.cluster ?? {};
  if (!c.server) throw new KubeconfigError(`${cluster.file}: cluster "${clusterName}" has no server`);
  const base = dirname(cluster.file);
  const ca = c['certificate-authority-data']
    ? b64(c['certificate-authority-data'])
    : c['certificate-authority']
      ? readRelative(cluster.file, base, c['certificate-authority'], `clusters[${clusterName}].certificate-authority`)
      : undefined;
  const user = userName ? first((d) => d.users, userName) : undefined;
  if (userName && !user)
    throw new KubeconfigError(`${ctx.file}: context "${contextName}" names user "${userName}", which is not defined`);
  const auth = user ? userAuth(user.file, user.item, contextName, docs) : staticAuth({ headers: {} });
  const server = c.server.replace(/\/+$/, '');
  const impersonate = user ? impersonation(user.file, user.item) : undefined;
  const proxyUrl = c['proxy-url']
    ? checkProxyUrl(c['proxy-url'], `${cluster.file}: clusters[${clusterName}].proxy-url`)
    : proxyFor(server, env);
  return {
    server,
    ...(ca !== undefined ? { ca } : {}),
    ...(c['insecure-skip-tls-verify'] ? { insecureSkipTlsVerify: true } : {}),
    ...(c['tls-server-name'] ? { tlsServerName: c['tls-server-name'] } : {}),
    auth,
    ...(impersonate ? { impersonate } : {}),
    ...(proxyUrl !== undefined ? { proxyUrl } : {}),
    namespace: ctx.item.context?.namespace ?? 'default',
    contextName,
  };
}

function userAuth(
  file: string,
  named: NamedUser,
  contextName: string,
  docs: { file: string; raw: string }[],
): Authenticator {
  const u = named.user ?? {};
  const base = dirname(file);
  const field = (f: string) => `users[${named.name}].${f}`;
  const cert = u['client-certificate-data']
    ? b64(u['client-certificate-data'])
    : u['client-certificate']
      ? readRelative(file, base, u['client-certificate'], field('client-certificate'))
      : undefined;
  const key = u['client-key-data']
    ? b64(u['client-key-data'])
    : u['client-key']
      ? readRelative(file, base, u['client-key'], field('client-key'))
      : undefined;
  if ((cert === undefined) !== (key === undefined)) {
    throw new KubeconfigError(`${file}: ${field('client-certificate')} and client-key must be given together`);
  }
  const tls = cert !== undefined && key !== undefined ? { cert, key } : {};
  if (u.exec) return execAuth(file, named.name, u.exec, tls, base);
  if (u['auth-provider']) return authProviderAuth(docs, contextName, `${file}: users[${named.name}].auth-provider`);
  if (u.tokenFile) return tokenFileAuth(isAbsolute(u.tokenFile) ? u.tokenFile : join(base, u.tokenFile), tls);
  if (u.token) return staticAuth({ headers: { authorization: `Bearer ${u.token}` }, ...tls });
  if (u.username !== undefined && u.password !== undefined) {
    const basic = Buffer.from(`${u.username}:${u.password}`).toString('base64');
    return staticAuth({ headers: { authorization: `Basic ${basic}` }, ...tls });
  }
  return staticAuth({ headers: {}, ...tls });
}

/** The in-cluster config: the service account token (re-read every minute), CA and namespace. */
export function loadInCluster(env: NodeJS.ProcessEnv = process.env, dir: string = SA_DIR): ConnectionConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) throw new KubeconfigError('not running in a cluster: KUBERNETES_SERVICE_HOST is not set');
  const ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  let namespace = 'default';
  try {
    namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim() || 'default';
  } catch {
    // keep the default
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const proxyUrl = proxyFor(server, env);
  return {
    server,
    ca,
    auth: tokenFileAuth(join(dir, 'token'), {}),
    ...(proxyUrl !== undefined ? { proxyUrl } : {}),
    namespace,
    contextName: 'in-cluster',
  };
}

function inClusterTokenExists(dir = SA_DIR): boolean {
  return existsSync(join(dir, 'token'));
}

/** The user's `as*` fields, checked: `as-uid`, `as-groups` and `as-user-extra` need `as`. */
function impersonation(file: string, named: NamedUser): Impersonation | undefined {
  const u = named.user ?? {};
  const field = (f: string) => `${file}: users[${named.name}].${f}`;
  const groups = u['as-groups'];
  const extra = u['as-user-extra'];
  if (groups !== undefined && (!Array.isArray(groups) || groups.some((g) => typeof g !== 'string')))
    throw new KubeconfigError(`${field('as-groups')} must be a list of group names`);
  if (extra !== undefined) {
    const ok =
      typeof extra === 'object' &&
      extra !== null &&
      !Array.isArray(extra) &&
      Object.values(extra).every((v) => Array.isArray(v) && v.every((x) => typeof x === 'string'));
    if (!ok) throw new KubeconfigError(`${field('as-user-extra')} must map keys to lists of strings`);
  }
  if (!u.as) {
    const given = (['as-uid', 'as-groups', 'as-user-extra'] as const).filter((k) => u[k] !== undefined);
    if (given.length > 0)
      throw new KubeconfigError(`${field(given[0] ?? 'as')} needs \`as\` (the user to impersonate) to be set too`);
    return undefined;
  }
  return {
    user: u.as,
    ...(u['as-uid'] ? { uid: u['as-uid'] } : {}),
    ...(groups && groups.length > 0 ? { groups } : {}),
    ...(extra ? { extra } : {}),
  };
}

function b64(data: string): string {
  return Buffer.from(data, 'base64').toString('utf8');
}

function readRelative(file: string, base: string, path: string, field: string): string {
  const full = isAbsolute(path) ? path : join(base, path);
  try {
    return readFileSync(full, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`${file}: ${field} names ${full}, which cannot be read: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
