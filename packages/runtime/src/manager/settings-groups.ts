/**
 * @module manager/settings-groups
 * The manager settings of one concern each, as manager/settings reads them from a flag or its environment variable:
 * the controllers' workers and drain, the leader-election Lease's timings, logging, the kubeconfig, the content type
 * of reads, the field validation of writes, the namespaces to watch.
 *
 * Guarantees: a bad value is a `SettingsError` naming the flag (or variable) and what it accepts; an absent one leaves
 * the manager's default.
 */
import { checkLeaseTimings, DEFAULT_LEASE_TIMINGS } from '../lease/lease.ts';
import { createLogger, type LogLevel } from '../logger.ts';
import { parseDuration, SettingsError } from './flags.ts';
import type { ManagerOptions } from './options.ts';

/** The value of `--flag`, else `$variable`, and where it came from (for messages). */
export type Str = (flag: string, variable: string) => [string | undefined, string];

/** Parsed flag values by name. */
export type ParsedValues = Record<string, string | boolean | undefined>;

/**
 * The controllers' settings: `--max-concurrent-reconciles`, `--graceful-shutdown-timeout` and `--reconcile-timeout`
 * (`0` for no limit).
 */
export function controllerSettings(str: Str): {
  maxConcurrentReconciles?: number;
  gracefulShutdownTimeoutMs?: number;
  reconcileTimeoutMs?: number;
} {
  const [mcr, mcrFrom] = str('max-concurrent-reconciles', 'MAX_CONCURRENT_RECONCILES');
  const maxConcurrentReconciles = mcr === undefined ? undefined : Number(mcr);
  if (
    maxConcurrentReconciles !== undefined &&
    !(Number.isInteger(maxConcurrentReconciles) && maxConcurrentReconciles >= 1)
  )
    throw new SettingsError(`${mcrFrom}: "${mcr}" is not a whole number ≥ 1`);
  const [gst, gstFrom] = str('graceful-shutdown-timeout', 'GRACEFUL_SHUTDOWN_TIMEOUT');
  const gracefulShutdownTimeoutMs = gst === undefined ? undefined : parseDuration(gst, gstFrom);
  const [rt, rtFrom] = str('reconcile-timeout', 'RECONCILE_TIMEOUT');
  const reconcileTimeoutMs = rt === undefined ? undefined : parseDuration(rt, rtFrom);
  return {
    ...(maxConcurrentReconciles ? { maxConcurrentReconciles } : {}),
    ...(gracefulShutdownTimeoutMs !== undefined ? { gracefulShutdownTimeoutMs } : {}),
    ...(reconcileTimeoutMs !== undefined ? { reconcileTimeoutMs } : {}),
  };
}

/** The Lease's timings: `--leader-election-lease-duration`, `-renew-deadline`, `-retry-period` (as durations). */
export function leaseTimings(str: Str): {
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
} {
  const out: { leaseDurationMs?: number; renewDeadlineMs?: number; retryPeriodMs?: number } = {};
  const timings = [
    ['leaseDurationMs', 'lease-duration', 'LEASE_DURATION'],
    ['renewDeadlineMs', 'renew-deadline', 'RENEW_DEADLINE'],
    ['retryPeriodMs', 'retry-period', 'RETRY_PERIOD'],
  ] as const;
  for (const [key, flag, variable] of timings) {
    const [v, from] = str(`leader-election-${flag}`, `LEADER_ELECTION_${variable}`);
    if (v !== undefined) out[key] = parseDuration(v, from);
  }
  if (Object.keys(out).length === 0) return out;
  const t = { ...DEFAULT_LEASE_TIMINGS, ...out };
  try {
    checkLeaseTimings('leader election', t.leaseDurationMs, t.renewDeadlineMs, t.retryPeriodMs);
  } catch (err) {
    throw new SettingsError(
      `--leader-election-lease-duration, -renew-deadline, -retry-period: ${(err as Error).message.replace(/^leader election: /, '')} (defaults 15s, 10s, 2s)`,
    );
  }
  return out;
}

/** `--log-level` and `--log-format` (or their variables): a logger, unless `base` has one or neither is given. */
export function logSettings(base: ManagerOptions, str: Str): Pick<ManagerOptions, 'log'> {
  const [level, levelFrom] = str('log-level', 'LOG_LEVEL');
  if (level !== undefined && !['debug', 'info', 'warn', 'error'].includes(level)) {
    throw new SettingsError(`${levelFrom}: "${level}" is not one of debug, info, warn, error`);
  }
  const [format, formatFrom] = str('log-format', 'LOG_FORMAT');
  if (format !== undefined && format !== 'json' && format !== 'pretty') {
    throw new SettingsError(`${formatFrom}: "${format}" is not json or pretty`);
  }
  if (base.log || (level === undefined && format === undefined)) return {};
  return { log: createLogger({ name: base.name, level: (level ?? 'info') as LogLevel, pretty: format === 'pretty' }) };
}

/** `--kubeconfig` and `--context`, over `base.kubeconfig`. */
export function kubeconfigSettings(base: ManagerOptions, values: ParsedValues): Pick<ManagerOptions, 'kubeconfig'> {
  const path = typeof values.kubeconfig === 'string' ? values.kubeconfig : undefined;
  const context = typeof values.context === 'string' ? values.context : undefined;
  if (!path && !context) return {};
  return { kubeconfig: { ...base.kubeconfig, ...(path ? { path } : {}), ...(context ? { context } : {}) } };
}

/** The reads' encoding of built-in kinds, as kube-controller-manager's `--kube-api-content-type`: protobuf or JSON. */
const CONTENT_TYPES: ReadonlyMap<string, boolean> = new Map([
  ['application/vnd.kubernetes.protobuf', true],
  ['application/json', false],
]);

/** `--kube-api-content-type`, else `KUBE_API_CONTENT_TYPE`: whether built-in kinds are read as protobuf. */
export function contentType(str: Str): Pick<ManagerOptions, 'protobuf'> {
  const [type, from] = str('kube-api-content-type', 'KUBE_API_CONTENT_TYPE');
  if (type === undefined) return {};
  const protobuf = CONTENT_TYPES.get(type.trim().toLowerCase());
  if (protobuf === undefined)
    throw new SettingsError(`${from}: "${type}" is not application/vnd.kubernetes.protobuf or application/json`);
  return { protobuf };
}

/** `--field-validation`, else `FIELD_VALIDATION`: `Strict`, `Warn` or `Ignore` (any case), for the manager's writes. */
export function fieldValidation(str: Str): Pick<ManagerOptions, 'fieldValidation'> {
  const [value, from] = str('field-validation', 'FIELD_VALIDATION');
  if (value === undefined) return {};
  const found = (['Strict', 'Warn', 'Ignore'] as const).find((v) => v.toLowerCase() === value.trim().toLowerCase());
  if (!found) throw new SettingsError(`${from}: "${value}" is not Strict, Warn or Ignore`);
  return { fieldValidation: found };
}

/** `--namespace` / WATCH_NAMESPACE: one namespace, or a comma-separated list of them. */
export function watchNamespaces(value: string | undefined): { namespace?: string; namespaces?: string[] } {
  const list = [...new Set((value ?? '').split(',').map((n) => n.trim()))].filter((n) => n !== '');
  if (list.length === 0) return {};
  return list.length === 1 ? { namespace: list[0] as string } : { namespaces: list };
}
