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
 *
 * A bad value is a `SettingsError` naming the flag (or variable) and what it accepts.
 */

import { parseArgs } from 'node:util';
import { OpkitError } from '../errors.ts';
import { createLogger, type LogLevel } from '../logger.ts';
import type { ManagerOptions } from './manager.ts';
import { METRICS_SERVING_HELP, metricsServingFlags } from './metricsserving.ts';
import { parseBindAddress } from './server.ts';

export class SettingsError extends OpkitError<'InvalidSetting'> {
  override readonly name = 'SettingsError';

  constructor(message: string, options?: { cause?: unknown }) {
    super('InvalidSetting', message, options);
  }
}

export const SETTINGS_HELP = `Manager options:
  --metrics-bind-address ADDR        serve /metrics here (host:port, :port, 0 = off; default :8443)
  --health-probe-bind-address ADDR   serve /healthz and /readyz here (default :8081)
  --leader-elect                     run controllers only on the replica holding the Lease
  --leader-election-namespace NS     the Lease's namespace (default $POD_NAMESPACE, else the kubeconfig's)
  --leader-election-id NAME          the Lease's name (default <operator>-leader)
  --namespace NS[,NS…]               watch only these namespaces (default: all)
  --max-concurrent-reconciles N      workers per controller (default 1)
  --graceful-shutdown-timeout DUR    time in-flight reconciles get on shutdown (default 2s)
  --kubeconfig FILE, --context NAME  which cluster (default: as kubectl, or in-cluster)
  --log-level LEVEL                  debug, info, warn, error (default info)
  --log-format FORMAT                json or pretty (default json)
${METRICS_SERVING_HELP}`;

/** Parses the flags and environment into ManagerOptions (with `name` and anything in `base` kept). */
export function settingsFromArgs(
  base: ManagerOptions,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): ManagerOptions {
  // metrics serving (--metrics-secure, --metrics-cert-*): parsed in manager/metricsserving.ts, merged below
  const served = metricsServingFlags(argv, env);
  if (served.problem) throw new SettingsError(served.problem);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: served.rest,
      strict: true,
      allowPositionals: false,
      options: {
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
      },
    }));
  } catch (err) {
    throw new SettingsError(`${(err as Error).message}\n${SETTINGS_HELP}`);
  }
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
    leaderElection: {
      ...base.leaderElection,
      ...(leaderElect !== undefined ? { enabled: leaderElect } : {}),
      ...(leNamespace ? { namespace: leNamespace } : {}),
      ...(leId ? { leaseName: leId } : {}),
    },
    // issue 17: a comma-separated list (as operator-sdk's WATCH_NAMESPACE) watches those namespaces, one watch each
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

/** `--namespace` / WATCH_NAMESPACE: one namespace, or a comma-separated list of them (issue 17). */
function watchNamespaces(value: string | undefined): { namespace?: string; namespaces?: string[] } {
  const list = [...new Set((value ?? '').split(',').map((n) => n.trim()))].filter((n) => n !== '');
  if (list.length === 0) return {};
  return list.length === 1 ? { namespace: list[0] as string } : { namespaces: list };
}
