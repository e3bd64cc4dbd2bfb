/**
 * @module manager/metricsserving
 * How the manager serves `/metrics`: securely by default, plain HTTP only when asked.
 *
 * - `secure: true` (the default): HTTPS on `:8443`, with a certificate from `certDir` (a `FileCertificates` source:
 *   reloaded when it changes, a bad pair keeps the previous one) or a self-signed one made at start for `localhost`,
 *   the host name and loopback (see tls/issue.ts), and every scrape authenticated and authorized by the apiserver (TokenReview
 *   and SubjectAccessReview on the non-resource URL, see metricsauth.ts). Prometheus needs a ServiceAccount bound to
 *   the generated `<operator>-metrics-reader` ClusterRole; the operator needs `metricsAuthPermissions()`.
 * - `secure: false`: plain HTTP on `:8080`, no authentication — an explicit choice, for a sidecar or a network policy
 *   that does the guarding.
 *
 * Flags and variables (kubebuilder's names, so Deployments written for Go operators keep working), parsed by
 * `metricsServingFlags` and merged by manager/settings.ts:
 *
 * | flag | environment | meaning |
 * | --- | --- | --- |
 * | `--metrics-secure[=true\|false]` | `METRICS_SECURE` | HTTPS with authn/authz (default true) |
 * | `--metrics-cert-path DIR` | `METRICS_CERT_PATH` | directory with the serving certificate (default: self-signed) |
 * | `--metrics-cert-name NAME` | `METRICS_CERT_NAME` | certificate file in it (default tls.crt) |
 * | `--metrics-cert-key NAME` | `METRICS_CERT_KEY` | key file in it (default tls.key) |
 *
 * Guarantees: a certificate directory whose files are missing, unreadable or not a matching pair fails `metricsServer`
 * with a `MetricsAuthError` (`CertificateUnreadable`) naming the file; the returned `release` stops the reloading and
 * ends the scrapes' reviews still under way.
 */
import type { Client } from '../client/client.ts';
import type { Logger } from '../logger.ts';
import { selfSignedCertificate } from '../tls/issue.ts';
import { CertificateError, type KeyPair } from '../tls/keypair.ts';
import { FileCertificates } from '../tls/sources.ts';
import { MetricsAuthError, type ScrapeAuthOptions, ScrapeAuthorizer } from './metricsauth.ts';
import { type Endpoint, HttpEndpoints } from './server.ts';

/**
 * How the manager serves /metrics: where, and whether over HTTPS with each scrape authenticated (TokenReview) and
 * authorized (SubjectAccessReview), as controller-runtime's secure serving.
 */
export interface MetricsServingOptions {
  /** `host:port`, `:port`, or `0` to disable (default `:8443` when secure, `:8080` when not). */
  readonly bindAddress?: string;
  /** HTTPS with TokenReview + SubjectAccessReview on every scrape (default true). `false` serves plain HTTP. */
  readonly secure?: boolean;
  /** Directory of the serving certificate (default: a self-signed certificate made at start). */
  readonly certDir?: string;
  /** Certificate file in `certDir` (default `tls.crt`). */
  readonly certName?: string;
  /** Key file in `certDir` (default `tls.key`). */
  readonly keyName?: string;
  /** Cache lifetimes of the reviews' answers (see metricsauth.ts). */
  readonly auth?: Omit<ScrapeAuthOptions, 'client' | 'log' | 'signal'>;
}

/** The bind address in force: the given one, else `:8443` (secure) or `:8080` (plain). */
export function metricsBindAddress(options: MetricsServingOptions = {}): string {
  return options.bindAddress ?? (options.secure === false ? ':8080' : ':8443');
}

/** A metrics server (not yet started) for `endpoint`, and a function to call once it has stopped. */
export async function metricsServer(
  options: MetricsServingOptions,
  endpoint: Endpoint,
  deps: { client: Client; log: Logger },
): Promise<{ server: HttpEndpoints; release: () => void }> {
  const bind = metricsBindAddress(options);
  if (options.secure === false) return { server: new HttpEndpoints(bind, [endpoint]), release: () => {} };
  const dir = options.certDir;
  const files = dir
    ? new FileCertificates({
        dir,
        purpose: 'metrics',
        ...(options.certName ? { certName: options.certName } : {}),
        ...(options.keyName ? { keyName: options.keyName } : {}),
        onError: (err) => deps.log.warn({ err: err.message }, 'keeping the previous metrics serving certificate'),
      })
    : undefined;
  let tls: KeyPair;
  try {
    tls = files ? await files.load() : selfSignedCertificate();
  } catch (err) {
    if (!(err instanceof CertificateError)) throw err;
    const hint = 'to serve a self-signed certificate instead, leave the certificate path unset';
    throw new MetricsAuthError('CertificateUnreadable', `${err.message} — ${hint}`, { cause: err });
  }
  const stopped = new AbortController(); // ends the reviews still under way once the server has stopped
  const authorizer = new ScrapeAuthorizer({
    ...options.auth,
    client: deps.client,
    log: deps.log,
    signal: stopped.signal,
  });
  const server = new HttpEndpoints(bind, [endpoint], {
    tls,
    authorize: (req, signal) => authorizer.authorize(req, signal),
  });
  if (!files) return { server, release: () => stopped.abort() };
  files.onChange((pair) => {
    server.setCertificate(pair);
    deps.log.info({ dir }, 'metrics serving certificate reloaded');
  });
  const watching = new AbortController();
  files.watch(watching.signal);
  return {
    server,
    release: () => {
      stopped.abort();
      watching.abort();
    },
  };
}

export const METRICS_SERVING_HELP = `  --metrics-secure[=BOOL]            HTTPS, each scrape checked by TokenReview + SubjectAccessReview (default true;
                                     false = plain HTTP); the default bind address is :8443, or :8080 when false
  --metrics-cert-path DIR            serving certificate directory (default: a self-signed certificate)
  --metrics-cert-name FILE           certificate file in it (default tls.crt)
  --metrics-cert-key FILE            key file in it (default tls.key)
`;

/**
 * Takes the metrics-serving flags out of `argv` (so the remaining flags parse as before) and reads their variables.
 * Returns the remaining arguments, the options found, and a problem (naming the flag or variable) if a value is bad.
 */
/** The flags `metricsServingFlags` takes out of argv. */
export const METRICS_SERVING_FLAGS: readonly string[] = [
  'metrics-secure',
  'metrics-cert-path',
  'metrics-cert-name',
  'metrics-cert-key',
];

export function metricsServingFlags(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): { rest: string[]; options: MetricsServingOptions; problem?: string } {
  const rest: string[] = [];
  const found: Record<string, [string, string]> = {};
  const names: readonly string[] = METRICS_SERVING_FLAGS;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      rest.push(...argv.slice(i));
      break;
    }
    const m = /^--([\w-]+)(?:=(.*))?$/.exec(arg);
    const name = m?.[1];
    if (!m || !name || !names.includes(name)) {
      rest.push(arg);
      continue;
    }
    if (m[2] !== undefined) found[name] = [m[2], `--${name}`];
    else if (name === 'metrics-secure') {
      const next = argv[i + 1];
      if (next === 'true' || next === 'false') {
        found[name] = [next, `--${name}`];
        i++;
      } else found[name] = ['true', `--${name}`];
    } else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) return { rest, options: {}, problem: `--${name} needs a value` };
      found[name] = [next, `--${name}`];
      i++;
    }
  }
  const value = (name: string, variable: string): [string, string] | undefined => {
    const v = found[name];
    if (v) return v;
    const e = env[variable];
    return e !== undefined && e !== '' ? [e, variable] : undefined;
  };
  const options: { -readonly [K in keyof MetricsServingOptions]: MetricsServingOptions[K] } = {};
  const secure = value('metrics-secure', 'METRICS_SECURE');
  if (secure) {
    if (!/^(true|false|1|0)$/i.test(secure[0]))
      return { rest, options: {}, problem: `${secure[1]}: "${secure[0]}" is not true or false` };
    options.secure = /^(true|1)$/i.test(secure[0]);
  }
  const dir = value('metrics-cert-path', 'METRICS_CERT_PATH');
  if (dir) options.certDir = dir[0];
  const cert = value('metrics-cert-name', 'METRICS_CERT_NAME');
  if (cert) options.certName = cert[0];
  const key = value('metrics-cert-key', 'METRICS_CERT_KEY');
  if (key) options.keyName = key[0];
  const fileName = cert ?? key;
  if (fileName && !dir) {
    const variable = fileName[1].startsWith('--') ? '--metrics-cert-path' : 'METRICS_CERT_PATH';
    return { rest, options: {}, problem: `${fileName[1]} needs ${variable} (the directory the file is in)` };
  }
  if (options.secure === false && dir && secure) {
    return { rest, options: {}, problem: `${dir[1]} needs secure metrics, but ${secure[1]} is false` };
  }
  return { rest, options };
}
