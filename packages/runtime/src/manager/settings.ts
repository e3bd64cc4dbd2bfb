/**
 * @module manager/settings
 * Manager settings from the command line and the environment, grouped by concern as ManagerOptions is. Flags win over
 * environment variables, which win over the defaults. Flag names follow kubebuilder's generated main.go, so
 * Deployment manifests written for Go operators keep working:
 *
 * | flag | environment | meaning |
 * | --- | --- | --- |
 * | `--metrics-bind-address` | `METRICS_BIND_ADDRESS` | `host:port`, `:port`, `0` = off (default `:8443`, `:8080` plain) |
 * | `--metrics-secure`, `--metrics-cert-*` | `METRICS_SECURE`, … | see manager/metricsserving.ts |
 * | `--health-probe-bind-address` | `HEALTH_PROBE_BIND_ADDRESS` | (default `:8081`) |
 * | `--leader-elect` | `LEADER_ELECT` | `true` / `false` (default false) |
 * | `--leader-election-namespace` | `POD_NAMESPACE` | the Lease's namespace |
 * | `--leader-election-id` | `LEADER_ELECTION_ID` | the Lease's name |
 * | `--leader-election-lease-duration` | `LEADER_ELECTION_LEASE_DURATION` | how long a Lease holds (default 15s); the three timings apply to the sharding member Leases too |
 * | `--leader-election-renew-deadline` | `LEADER_ELECTION_RENEW_DEADLINE` | a leader stops unless renewed within it (default 10s) |
 * | `--leader-election-retry-period` | `LEADER_ELECTION_RETRY_PERIOD` | between tries to acquire or renew (default 2s) |
 * | `--sharding` | `SHARDING` | `true` / `false` (default false): every replica reconciles its share (docs/sharding.md) |
 * | `--sharding-filter` | `SHARDING_FILTER` | `auto` (default), `labels` or `server`: how a replica's caches select its shards |
 * | `--namespace` | `WATCH_NAMESPACE` | watch one namespace, or a comma-separated list of them (default: all) |
 * | `--max-concurrent-reconciles` | `MAX_CONCURRENT_RECONCILES` | workers per controller (default 1) |
 * | `--graceful-shutdown-timeout` | `GRACEFUL_SHUTDOWN_TIMEOUT` | e.g. `2s`, `30s` (default 2s) |
 * | `--reconcile-timeout` | `RECONCILE_TIMEOUT` | how long one reconcile may run before its signal aborts, e.g. `30s` (default: no limit; `0` lifts `controllers.reconcileTimeoutMs`; a controller's own `reconcileTimeoutMs` wins) |
 * | `--kubeconfig`, `--context` | `KUBECONFIG` | which cluster (default: as kubectl, or in-cluster) |
 * | `--field-validation` | `FIELD_VALIDATION` | what a write's unknown fields do: `Strict` (the default: the write fails naming the field), `Warn` or `Ignore` |
 * | `--kube-api-content-type` | `KUBE_API_CONTENT_TYPE` | how built-in kinds are read: `application/vnd.kubernetes.protobuf` (default) or `application/json` |
 * | `--log-level` | `LOG_LEVEL` | debug, info, warn, error (default info) |
 * | `--log-format` | `LOG_FORMAT` | json (default) or pretty |
 * | `--webhook-bind-address` | `WEBHOOK_BIND_ADDRESS` | the webhook server's `host:port` (default `:9443`) |
 * | `--webhook-cert-dir` | `WEBHOOK_CERT_DIR` | its `tls.crt` / `tls.key` (default `/tmp/k8s-webhook-server/serving-certs`) |
 *
 * An operator adds its own flags, typed and with help text (`defineFlags` / `settings`), parsed by the same
 * `node:util` `parseArgs` call, so an unknown flag, a missing value or a bad one fails the same way, and `--help`
 * lists them below the manager's:
 *
 * ```ts
 * import { Manager, settings } from '@opkit/runtime';
 *
 * const { manager, flags } = settings({
 *   name: 'appservice-operator',
 *   flags: { resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often too' } },
 * });
 * const resyncMs: number | undefined = flags.resyncPeriod; // milliseconds
 * const mgr = await Manager.create(manager);
 * ```
 * Flag names are the keys in kebab case (`resyncPeriod` → `--resync-period`); types are `string`, `boolean`,
 * `integer` and `duration` (milliseconds); a flag without a `default` is `undefined` when not given.
 *
 * A bad value is a `SettingsError` naming the flag (or variable) and what it accepts.
 */

import { parseArgs } from 'node:util';
import { parseBindAddress } from '../internal/address.ts';
import {
  type Flag,
  type Flags,
  type FlagValues,
  flagHelpRows,
  flagValues,
  kebab,
  parseArgsOptions,
  SettingsError,
} from './flags.ts';
import {
  METRICS_SERVING_FLAGS,
  METRICS_SERVING_HELP,
  type MetricsServingOptions,
  metricsServingFlags,
} from './metricsserving.ts';
import type { ManagerOptions } from './options.ts';
import {
  contentType,
  controllerSettings,
  fieldValidation,
  kubeconfigSettings,
  leaseTimings,
  logSettings,
  type ParsedValues,
  watchNamespaces,
} from './settings-groups.ts';

export {
  defineFlags,
  type Flag,
  type Flags,
  type FlagType,
  type FlagValues,
  parseDuration,
  SettingsError,
  type SettingsErrorCode,
} from './flags.ts';

/** The manager's part of `--help`: its flags and what they do. */
export const SETTINGS_HELP = `Manager options:
  -h, --help                         show this help
  --metrics-bind-address ADDR        serve /metrics here (host:port, :port, 0 = off; default :8443, :8080 plain)
  --health-probe-bind-address ADDR   serve /healthz and /readyz here (default :8081)
  --leader-elect                     run controllers only on the replica holding the Lease
  --leader-election-namespace NS     the Lease's namespace (default $POD_NAMESPACE, else the kubeconfig's)
  --leader-election-id NAME          the Lease's name (default <operator>-leader)
  --leader-election-lease-duration DUR
                                     how long a Lease holds without renewal (default 15s); these
                                     three timings apply to the sharding member Leases too
  --leader-election-renew-deadline DUR
                                     the leader stops leading unless it renewed within it (default 10s)
  --leader-election-retry-period DUR
                                     wait between tries to acquire or renew (default 2s)
  --sharding                         every replica runs the controllers, each on its share of the objects
  --sharding-filter FILTER           how a replica's caches select its shards: auto (default), labels or
                                     server (the apiserver's shard selectors)
  --namespace NS[,NS…]               watch only these namespaces (default: all)
  --max-concurrent-reconciles N      workers per controller (default 1)
  --graceful-shutdown-timeout DUR    drain time of a graceful stop: in-flight reconciles get it, webhooks keep
                                     serving for it; the stop's phases share twice it + 1s (default 2s)
  --reconcile-timeout DUR            a reconcile's signal aborts after this long (default: no limit;
                                     a controller's own reconcileTimeoutMs wins)
  --kubeconfig FILE, --context NAME  which cluster (default: as kubectl, or in-cluster)
  --field-validation MODE            a write with a field the schema lacks: Strict (fails, the default),
                                     Warn or Ignore (dropped)
  --kube-api-content-type TYPE       how built-in kinds are read: application/vnd.kubernetes.protobuf (default)
                                     or application/json
  --log-level LEVEL                  debug, info, warn, error (default info)
  --log-format FORMAT                json or pretty (default json)
  --webhook-bind-address ADDR        serve webhooks here, if the operator has any (default :9443)
  --webhook-cert-dir DIR             the webhook serving certificate's tls.crt and tls.key
                                     (default /tmp/k8s-webhook-server/serving-certs)
${METRICS_SERVING_HELP}`;

const MANAGER_FLAGS = {
  'metrics-bind-address': { type: 'string' },
  'health-probe-bind-address': { type: 'string' },
  'leader-elect': { type: 'boolean' },
  'leader-election-namespace': { type: 'string' },
  'leader-election-id': { type: 'string' },
  'leader-election-lease-duration': { type: 'string' },
  'leader-election-renew-deadline': { type: 'string' },
  'leader-election-retry-period': { type: 'string' },
  sharding: { type: 'boolean' },
  'sharding-filter': { type: 'string' },
  namespace: { type: 'string' },
  'max-concurrent-reconciles': { type: 'string' },
  'graceful-shutdown-timeout': { type: 'string' },
  'reconcile-timeout': { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  'kube-api-content-type': { type: 'string' },
  'field-validation': { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'webhook-bind-address': { type: 'string' },
  'webhook-cert-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

interface ParsedFlags {
  readonly values: ParsedValues;
  /** --metrics-secure[=bool] and --metrics-cert-*, with their environment variables (manager/metricsserving.ts). */
  readonly served: { readonly options: MetricsServingOptions };
}

/** `metricsServingFlags`, a bad value thrown as the `SettingsError` naming it. */
function servedFlags(argv: readonly string[], env: NodeJS.ProcessEnv): ReturnType<typeof metricsServingFlags> {
  const served = metricsServingFlags(argv, env);
  if (served.problem) throw new SettingsError(served.problem);
  return served;
}

/**
 * The metrics-serving settings of `argv` and `env` — `--metrics-secure` / `METRICS_SECURE` and `--metrics-cert-*` /
 * `METRICS_CERT_*` (the flag wins over its variable) — read exactly as `settings` and `settingsFromArgs` read them for
 * the manager, so a tool that starts an operator (`opkit run`) knows, before it starts it, whether `/metrics` will be
 * HTTPS (`secure` is `false` only when set so) and refuses what the operator would refuse. The bind address is not
 * among them: read it with `parseBindAddress`. Other flags in `argv` are passed over; reading stops at `--`.
 *
 * @throws SettingsError (`InvalidSetting`) naming the flag or variable, for a value the operator refuses: `secure`
 * other than true, false, 1 or 0 (any case), a certificate file name without its directory, a directory with
 * `secure` false.
 */
export function metricsServingSettings(
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): MetricsServingOptions {
  return servedFlags(argv, env).options;
}

function parseFlags(
  argv: readonly string[],
  extra: Record<string, { type: 'string' | 'boolean' }>,
  env: NodeJS.ProcessEnv,
): ParsedFlags {
  const served = servedFlags(argv, env);
  try {
    const { values } = parseArgs({
      args: served.rest,
      strict: true,
      allowPositionals: false,
      options: { ...MANAGER_FLAGS, ...extra },
    });
    return { values: values as ParsedValues, served };
  } catch (err) {
    throw new SettingsError(`${(err as Error).message} (run with --help for the options)`, { cause: err });
  }
}

/** Parses the flags and environment into ManagerOptions (with `name` and anything in `base` kept). */
export function settingsFromArgs(
  base: ManagerOptions,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): ManagerOptions {
  return managerOptions(base, parseFlags(argv, {}, env), env);
}

/** Reads flag values and environment variables: the flag wins, an empty variable counts as unset. */
function reader(values: ParsedValues, env: NodeJS.ProcessEnv) {
  /** The value of `--flag`, else `$variable`, and where it came from (for messages). */
  const str = (flag: string, variable: string): [string | undefined, string] => {
    const v = values[flag];
    if (typeof v === 'string') return [v, `--${flag}`];
    const e = env[variable];
    return [e !== undefined && e !== '' ? e : undefined, variable];
  };
  /** A bind address: `host:port`, `:port` or `0`. */
  const bind = (flag: string, variable: string): string | undefined => {
    const [v, from] = str(flag, variable);
    if (v === undefined || v === '0') return v;
    try {
      parseBindAddress(v);
    } catch {
      throw new SettingsError(`${from}: "${v}" is not host:port, :port or 0`);
    }
    return v;
  };
  /** A switch: `--flag`, else `$variable` (true, false, 1 or 0, any case). */
  const on = (flag: string, variable: string): boolean | undefined => {
    const [v] = typeof values[flag] === 'boolean' ? [String(values[flag])] : str(flag, variable);
    if (v !== undefined && !/^(true|false|1|0)$/i.test(v))
      throw new SettingsError(`${variable}: "${v}" is not true or false`);
    return v === undefined ? undefined : /^(true|1)$/i.test(v);
  };
  return { str, bind, on };
}

function managerOptions(base: ManagerOptions, parsed: ParsedFlags, env: NodeJS.ProcessEnv): ManagerOptions {
  const { values, served } = parsed;
  const { str, bind, on } = reader(values, env);
  const metrics = bind('metrics-bind-address', 'METRICS_BIND_ADDRESS');
  const health = bind('health-probe-bind-address', 'HEALTH_PROBE_BIND_ADDRESS');
  const webhookAt = bind('webhook-bind-address', 'WEBHOOK_BIND_ADDRESS');
  if (webhookAt === '0') throw new SettingsError('--webhook-bind-address: the webhook server cannot be turned off (0)');
  const [certDir] = str('webhook-cert-dir', 'WEBHOOK_CERT_DIR');
  const [elect, sharding] = [on('leader-elect', 'LEADER_ELECT'), on('sharding', 'SHARDING')];
  const [leNamespace] = str('leader-election-namespace', 'POD_NAMESPACE');
  const [leId] = str('leader-election-id', 'LEADER_ELECTION_ID');
  const [watchNamespace] = str('namespace', 'WATCH_NAMESPACE');
  const [filter] = str('sharding-filter', 'SHARDING_FILTER');
  if (filter !== undefined && filter !== 'auto' && filter !== 'labels' && filter !== 'server')
    throw new SettingsError(`--sharding-filter: "${filter}" is not auto, labels or server`);
  const controllers = controllerSettings(str);
  const timings = leaseTimings(str);
  return {
    ...base,
    ...logSettings(base, str),
    ...kubeconfigSettings(base, values),
    ...contentType(str),
    ...fieldValidation(str),
    metrics: { ...base.metrics, ...served.options, ...(metrics !== undefined ? { bindAddress: metrics } : {}) },
    health: { ...base.health, ...(health !== undefined ? { bindAddress: health } : {}) },
    webhook: {
      ...base.webhook,
      ...(webhookAt !== undefined ? { bindAddress: webhookAt } : {}),
      ...(certDir !== undefined ? { certDir } : {}),
    },
    leaderElection: {
      ...base.leaderElection,
      ...(elect !== undefined ? { enabled: elect } : {}),
      ...(leNamespace ? { namespace: leNamespace } : {}),
      ...(leId ? { leaseName: leId } : {}),
      ...timings,
    },
    // one set of Lease timings: leader election's Lease and, when sharded, each replica's member Lease
    sharding: {
      ...base.sharding,
      ...(sharding !== undefined ? { enabled: sharding } : {}),
      ...(filter !== undefined ? { filter } : {}),
      ...(leNamespace ? { namespace: leNamespace } : {}),
      ...timings,
    },
    // a comma-separated list (as operator-sdk's WATCH_NAMESPACE) watches those namespaces, one watch each
    cache: { ...base.cache, ...watchNamespaces(watchNamespace) },
    controllers: { ...base.controllers, ...controllers },
  };
}

/** What `settings` parses: the operator's name, its description and flags, and the options the manager starts from. */
export interface SettingsSpec<F extends Flags> {
  /** The operator's name (the manager's name; the first line of --help). */
  readonly name: string;
  /** What the operator does, for --help. */
  readonly description?: string;
  /** The operator's own flags (see `defineFlags`), parsed with the manager's. */
  readonly flags?: F;
  /** ManagerOptions the flags and environment start from. */
  readonly base?: Omit<ManagerOptions, 'name'>;
}

/** Settings of one operator process: the manager's options and the operator's own flags. */
export interface Settings<F extends Flags> {
  /** The options to pass to `Manager.create`. */
  readonly manager: ManagerOptions;
  /** The operator's flags, typed. */
  readonly flags: FlagValues<F>;
}

function checkFlags(flags: Flags): void {
  for (const key of Object.keys(flags)) {
    if (kebab(key) in MANAGER_FLAGS || METRICS_SERVING_FLAGS.includes(kebab(key))) {
      throw new SettingsError(`flag --${kebab(key)} is the manager's own: give the operator's flag another name`);
    }
  }
}

/** The --help text: usage, description, the operator's flags, then the manager's. */
export function settingsHelp<F extends Flags>(spec: SettingsSpec<F>): string {
  const rows = flagHelpRows(spec.flags ?? {});
  return [
    `Usage: ${spec.name} [options]`,
    '',
    ...(spec.description ? [spec.description, ''] : []),
    ...(rows.length > 0 ? ['Options:', ...rows, ''] : []),
    SETTINGS_HELP,
  ].join('\n');
}

/**
 * Parses argv and the environment: `{ help }` when --help or -h was given, else the settings. Throws a
 * `SettingsError` naming the flag or variable for bad input.
 */
export function parseSettings<F extends Flags>(
  spec: SettingsSpec<F>,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Settings<F> | { readonly help: string } {
  const flags: Flags = spec.flags ?? {};
  checkFlags(flags);
  const parsed = parseFlags(argv, parseArgsOptions(flags), env);
  const { values } = parsed;
  if (values.help === true) return { help: settingsHelp(spec) };
  return {
    manager: managerOptions({ ...spec.base, name: spec.name }, parsed, env),
    flags: flagValues(flags, values, env) as FlagValues<F>,
  };
}

/**
 * `parseSettings` for an operator's main: prints --help and exits 0, or prints one line naming the bad flag or
 * variable and exits 2; otherwise returns the settings.
 */
export function settings<const F extends Flags = Record<never, Flag>>(
  spec: SettingsSpec<F>,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Settings<F> {
  try {
    const parsed = parseSettings(spec, argv, env);
    if ('help' in parsed) {
      process.stdout.write(parsed.help);
      process.exit(0);
    }
    return parsed;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`${spec.name}: ${err.message}\n`);
    process.exit(2);
  }
}
