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
 * | `--namespace` | `WATCH_NAMESPACE` | watch one namespace, or a comma-separated list of them (default: all) |
 * | `--max-concurrent-reconciles` | `MAX_CONCURRENT_RECONCILES` | workers per controller (default 1) |
 * | `--graceful-shutdown-timeout` | `GRACEFUL_SHUTDOWN_TIMEOUT` | e.g. `2s`, `30s` (default 2s) |
 * | `--kubeconfig`, `--context` | `KUBECONFIG` | which cluster (default: as kubectl, or in-cluster) |
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
 * const { manager, flags } = settings({
 *   name: 'appservice-operator',
 *   flags: { resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often too' } },
 * });
 * flags.resyncPeriod; // number | undefined (milliseconds)
 * ```
 * Flag names are the keys in kebab case (`resyncPeriod` → `--resync-period`); types are `string`, `boolean`,
 * `integer` and `duration` (milliseconds); a flag without a `default` is `undefined` when not given.
 *
 * A bad value is a `SettingsError` naming the flag (or variable) and what it accepts.
 */

import { parseArgs } from 'node:util';
import { OpkitError } from '../errors.ts';
import { parseBindAddress } from '../internal/address.ts';
import { createLogger, type LogLevel } from '../logger.ts';
import type { ManagerOptions } from './manager.ts';
import {
  METRICS_SERVING_FLAGS,
  METRICS_SERVING_HELP,
  type MetricsServingOptions,
  metricsServingFlags,
} from './metricsserving.ts';

/**
 * A flag or environment variable with a value it does not accept, an unknown flag, or an operator flag named like one
 * of the manager's (code `InvalidSetting`); the message names it.
 */
export class SettingsError extends OpkitError<'InvalidSetting'> {
  override readonly name = 'SettingsError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('InvalidSetting', message, options);
  }
}

/** The manager's part of `--help`: its flags and what they do. */
export const SETTINGS_HELP = `Manager options:
  -h, --help                         show this help
  --metrics-bind-address ADDR        serve /metrics here (host:port, :port, 0 = off; default :8443, :8080 plain)
  --health-probe-bind-address ADDR   serve /healthz and /readyz here (default :8081)
  --leader-elect                     run controllers only on the replica holding the Lease
  --leader-election-namespace NS     the Lease's namespace (default $POD_NAMESPACE, else the kubeconfig's)
  --leader-election-id NAME          the Lease's name (default <operator>-leader)
  --namespace NS[,NS…]               watch only these namespaces (default: all)
  --max-concurrent-reconciles N      workers per controller (default 1)
  --graceful-shutdown-timeout DUR    drain time of a graceful stop: in-flight reconciles get it, webhooks keep
                                     serving for it; the stop's phases share twice it + 1s (default 2s)
  --kubeconfig FILE, --context NAME  which cluster (default: as kubectl, or in-cluster)
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
  namespace: { type: 'string' },
  'max-concurrent-reconciles': { type: 'string' },
  'graceful-shutdown-timeout': { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  'log-level': { type: 'string' },
  'log-format': { type: 'string' },
  'webhook-bind-address': { type: 'string' },
  'webhook-cert-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type ParsedValues = Record<string, string | boolean | undefined>;
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

function managerOptions(base: ManagerOptions, parsed: ParsedFlags, env: NodeJS.ProcessEnv): ManagerOptions {
  const { values, served } = parsed;
  const str = (flag: string, variable: string): [string | undefined, string] => {
    const v = values[flag];
    if (typeof v === 'string') return [v, `--${flag}`];
    const e = env[variable];
    return [e !== undefined && e !== '' ? e : undefined, variable];
  };
  const bind = (flag: string, variable: string) => {
    const [v, from] = str(flag, variable);
    if (v === undefined || v === '0') return v;
    try {
      parseBindAddress(v);
    } catch {
      throw new SettingsError(`${from}: "${v}" is not host:port, :port or 0`);
    }
    return v;
  };
  const metrics = bind('metrics-bind-address', 'METRICS_BIND_ADDRESS');
  const health = bind('health-probe-bind-address', 'HEALTH_PROBE_BIND_ADDRESS');
  const webhookAt = bind('webhook-bind-address', 'WEBHOOK_BIND_ADDRESS');
  if (webhookAt === '0') throw new SettingsError('--webhook-bind-address: the webhook server cannot be turned off (0)');
  const [certDir] = str('webhook-cert-dir', 'WEBHOOK_CERT_DIR');
  let leaderElect: boolean | undefined =
    typeof values['leader-elect'] === 'boolean' ? values['leader-elect'] : undefined;
  if (leaderElect === undefined && env.LEADER_ELECT !== undefined && env.LEADER_ELECT !== '') {
    if (!/^(true|false|1|0)$/i.test(env.LEADER_ELECT))
      throw new SettingsError(`LEADER_ELECT: "${env.LEADER_ELECT}" is not true or false`);
    leaderElect = /^(true|1)$/i.test(env.LEADER_ELECT);
  }
  const [leNamespace] = str('leader-election-namespace', 'POD_NAMESPACE');
  const [leId] = str('leader-election-id', 'LEADER_ELECTION_ID');
  const [watchNamespace] = str('namespace', 'WATCH_NAMESPACE');
  const [mcr, mcrFrom] = str('max-concurrent-reconciles', 'MAX_CONCURRENT_RECONCILES');
  let maxConcurrentReconciles: number | undefined;
  if (mcr !== undefined) {
    maxConcurrentReconciles = Number(mcr);
    if (!Number.isInteger(maxConcurrentReconciles) || maxConcurrentReconciles < 1) {
      throw new SettingsError(`${mcrFrom}: "${mcr}" is not a whole number ≥ 1`);
    }
  }
  const [gst, gstFrom] = str('graceful-shutdown-timeout', 'GRACEFUL_SHUTDOWN_TIMEOUT');
  const gracefulShutdownTimeoutMs = gst === undefined ? undefined : parseDuration(gst, gstFrom);
  const [level, levelFrom] = str('log-level', 'LOG_LEVEL');
  if (level !== undefined && !['debug', 'info', 'warn', 'error'].includes(level)) {
    throw new SettingsError(`${levelFrom}: "${level}" is not one of debug, info, warn, error`);
  }
  const [format, formatFrom] = str('log-format', 'LOG_FORMAT');
  if (format !== undefined && format !== 'json' && format !== 'pretty') {
    throw new SettingsError(`${formatFrom}: "${format}" is not json or pretty`);
  }
  const kubeconfigPath = typeof values.kubeconfig === 'string' ? values.kubeconfig : undefined;
  const context = typeof values.context === 'string' ? values.context : undefined;
  return {
    ...base,
    ...(base.log || (level === undefined && format === undefined)
      ? {}
      : { log: createLogger({ name: base.name, level: (level ?? 'info') as LogLevel, pretty: format === 'pretty' }) }),
    ...(kubeconfigPath || context
      ? {
          kubeconfig: {
            ...base.kubeconfig,
            ...(kubeconfigPath ? { path: kubeconfigPath } : {}),
            ...(context ? { context } : {}),
          },
        }
      : {}),
    metrics: { ...base.metrics, ...served.options, ...(metrics !== undefined ? { bindAddress: metrics } : {}) },
    health: { ...base.health, ...(health !== undefined ? { bindAddress: health } : {}) },
    webhook: {
      ...base.webhook,
      ...(webhookAt !== undefined ? { bindAddress: webhookAt } : {}),
      ...(certDir !== undefined ? { certDir } : {}),
    },
    leaderElection: {
      ...base.leaderElection,
      ...(leaderElect !== undefined ? { enabled: leaderElect } : {}),
      ...(leNamespace ? { namespace: leNamespace } : {}),
      ...(leId ? { leaseName: leId } : {}),
    },
    // a comma-separated list (as operator-sdk's WATCH_NAMESPACE) watches those namespaces, one watch each
    cache: { ...base.cache, ...watchNamespaces(watchNamespace) },
    controllers: {
      ...base.controllers,
      ...(maxConcurrentReconciles ? { maxConcurrentReconciles } : {}),
      ...(gracefulShutdownTimeoutMs !== undefined ? { gracefulShutdownTimeoutMs } : {}),
    },
  };
}

/** `30s`, `2m`, `1h`, `500ms`, or a plain number of seconds → milliseconds. */
export function parseDuration(text: string, from = 'duration'): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new SettingsError(`${from}: "${text}" is not a duration like 30s, 2m or 500ms`);
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  return Math.round(n * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h']);
}

/** The type of one operator flag. */
export type FlagType = 'string' | 'boolean' | 'integer' | 'duration';

type ValueOf<K extends FlagType> = K extends 'boolean' ? boolean : K extends 'string' ? string : number;

/** One flag an operator declares. */
export interface Flag<K extends FlagType = FlagType> {
  /**
   * The value's type: `string`, `boolean`, `integer`, or `duration` (`30s`, `2m`, `500ms`; parsed to milliseconds).
   */
  readonly type: K;
  /** One line for --help. */
  readonly help: string;
  /** An environment variable that sets it when the flag is absent. */
  readonly env?: string;
  /** The value when neither is given (else `undefined`); a duration's in milliseconds. */
  readonly default?: ValueOf<K>;
  /** For --help, e.g. `DUR` or `NAME` (default: from the type). */
  readonly placeholder?: string;
}

/** An operator's flags by key; `--<key in kebab case>` on the command line. */
export type Flags = Readonly<Record<string, Flag>>;

/** The parsed values of `F`: typed by each flag's type, `undefined` when absent and without a default. */
export type FlagValues<F extends Flags> = {
  readonly [K in keyof F]: F[K] extends { readonly default: unknown }
    ? ValueOf<F[K]['type']>
    : ValueOf<F[K]['type']> | undefined;
};

/** Declares an operator's flags, keeping their literal types (a typed identity). */
export function defineFlags<const F extends Flags>(flags: F): F {
  return flags;
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

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function checkFlags(flags: Flags): void {
  for (const key of Object.keys(flags)) {
    if (kebab(key) in MANAGER_FLAGS || METRICS_SERVING_FLAGS.includes(kebab(key))) {
      throw new SettingsError(`flag --${kebab(key)} is the manager's own: give the operator's flag another name`);
    }
  }
}

/** The --help text: usage, description, the operator's flags, then the manager's. */
export function settingsHelp<F extends Flags>(spec: SettingsSpec<F>): string {
  const rows = Object.entries(spec.flags ?? {}).map(([key, f]) => {
    const arg =
      f.type === 'boolean' ? '' : ` ${f.placeholder ?? { string: 'VALUE', integer: 'N', duration: 'DUR' }[f.type]}`;
    const extra = [f.default !== undefined ? `default ${String(f.default)}` : '', f.env ? `env ${f.env}` : ''].filter(
      Boolean,
    );
    return `  ${`--${kebab(key)}${arg}`.padEnd(35)}${f.help}${extra.length > 0 ? ` (${extra.join('; ')})` : ''}`;
  });
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
  const extra = Object.fromEntries(
    Object.entries(flags).map(([k, f]) => [kebab(k), { type: f.type === 'boolean' ? 'boolean' : 'string' }] as const),
  );
  const parsed = parseFlags(argv, extra, env);
  const { values } = parsed;
  if (values.help === true) return { help: settingsHelp(spec) };
  const own: Record<string, string | boolean | number | undefined> = {};
  for (const [key, f] of Object.entries(flags)) {
    const flag = `--${kebab(key)}`;
    const given = values[kebab(key)];
    const fromEnv = f.env !== undefined && env[f.env] !== undefined && env[f.env] !== '' ? env[f.env] : undefined;
    const raw = given ?? fromEnv;
    const from = given !== undefined ? flag : (f.env ?? flag);
    own[key] = raw === undefined ? f.default : convert(f.type, raw, from);
  }
  return {
    manager: managerOptions({ ...spec.base, name: spec.name }, parsed, env),
    flags: own as FlagValues<F>,
  };
}

function convert(type: FlagType, raw: string | boolean, from: string): string | boolean | number {
  if (typeof raw === 'boolean') return raw;
  switch (type) {
    case 'boolean':
      if (!/^(true|false|1|0)$/i.test(raw)) throw new SettingsError(`${from}: "${raw}" is not true or false`);
      return /^(true|1)$/i.test(raw);
    case 'integer': {
      const n = Number(raw);
      if (!Number.isInteger(n)) throw new SettingsError(`${from}: "${raw}" is not a whole number`);
      return n;
    }
    case 'duration':
      return parseDuration(raw, from);
    case 'string':
      return raw;
  }
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

/** `--namespace` / WATCH_NAMESPACE: one namespace, or a comma-separated list of them. */
function watchNamespaces(value: string | undefined): { namespace?: string; namespaces?: string[] } {
  const list = [...new Set((value ?? '').split(',').map((n) => n.trim()))].filter((n) => n !== '');
  if (list.length === 0) return {};
  return list.length === 1 ? { namespace: list[0] as string } : { namespaces: list };
}
