/**
 * @module commands/run-ports
 * The local ports the operator of `opkit run` will listen on, and whether each is free — checked before the run
 * writes anything to the cluster, so a second run of a project never gets as far as touching the first one's
 * webhook configurations.
 *
 * `operatorPorts` reads the operator's flags (those after `--`) and environment as the manager's settings read them
 * (`@opkit/runtime` manager/settings.ts: the last flag wins, then the environment variable, then the default):
 * metrics `--metrics-bind-address` / `METRICS_BIND_ADDRESS` (default `:8443`, `:8080` with `--metrics-secure=false`),
 * health `--health-probe-bind-address` / `HEALTH_PROBE_BIND_ADDRESS` (default `:8081`), and, for a project with
 * webhooks, `--webhook-bind-address` / `WEBHOOK_BIND_ADDRESS` when given. `0` (off) and port 0 (any free port) need
 * no check. The operator's own flags are passed over, whatever they are.
 *
 * `portsInUse` tries to listen on each address exclusively (as the operator will: `host:port`, `:port` = all
 * interfaces) and closes again at once; an address that cannot be bound gives a `CliError` (`PortInUse`) naming
 * the port, the flag that sets it and how to choose another.
 */
import { createServer } from 'node:net';
import { CliError } from '../errors.ts';

export type PortRole = 'metrics' | 'health' | 'webhook';

export interface OperatorPort {
  readonly role: PortRole;
  readonly flag: string;
  readonly variable: string;
  /** As given (or the default): `host:port` or `:port`. */
  readonly address: string;
  readonly from: 'flag' | 'environment' | 'default';
  /** '' for all interfaces. */
  readonly host: string;
  readonly port: number;
}

const FLAGS: Readonly<Record<PortRole, { flag: string; variable: string }>> = {
  metrics: { flag: 'metrics-bind-address', variable: 'METRICS_BIND_ADDRESS' },
  health: { flag: 'health-probe-bind-address', variable: 'HEALTH_PROBE_BIND_ADDRESS' },
  webhook: { flag: 'webhook-bind-address', variable: 'WEBHOOK_BIND_ADDRESS' },
};

/** The last value of `--name VALUE` / `--name=VALUE` in `argv` (up to a `--`), as node:util parseArgs keeps it. */
export function lastFlag(argv: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') break;
    if (arg === `--${name}`) {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        value = next;
        i++;
      }
    } else if (arg.startsWith(`--${name}=`)) value = arg.slice(name.length + 3);
  }
  return value;
}

/** `--metrics-secure[=true|false]`, `--metrics-secure true|false`, else METRICS_SECURE: false only when said. */
function metricsSecure(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  let value: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') break;
    if (arg === '--metrics-secure') {
      const next = argv[i + 1];
      if (next === 'true' || next === 'false') {
        value = next;
        i++;
      } else value = 'true';
    } else if (arg.startsWith('--metrics-secure=')) value = arg.slice('--metrics-secure='.length);
  }
  value ??= env.METRICS_SECURE || undefined;
  return value === undefined || !/^(false|0)$/i.test(value);
}

/** `host:port`, `:port`, `[v6]:port` → host ('' = all interfaces) and port; undefined for anything else. */
export function splitAddress(address: string): { host: string; port: number } | undefined {
  const m = /^(.*):(\d+)$/.exec(address);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port > 65_535) return undefined;
  return { host: (m[1] as string).replace(/^\[|\]$/g, ''), port };
}

/** The operator's address for `role`: the flag, else the variable, else `fallback`; undefined when off (0). */
export function operatorPort(
  role: PortRole,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  fallback: string | undefined,
): OperatorPort | undefined {
  const { flag, variable } = FLAGS[role];
  const given = lastFlag(argv, flag);
  const fromEnv = env[variable] || undefined;
  const address = given ?? fromEnv ?? fallback;
  if (address === undefined || address === '0') return undefined;
  const parts = splitAddress(address);
  if (!parts) return undefined; // the operator refuses it itself, naming the flag
  return {
    role,
    flag: `--${flag}`,
    variable,
    address,
    from: given !== undefined ? 'flag' : fromEnv !== undefined ? 'environment' : 'default',
    ...parts,
  };
}

/** The metrics and health ports the operator will listen on (the webhook port is the caller's: see run-operator). */
export function operatorPorts(argv: readonly string[], env: NodeJS.ProcessEnv): OperatorPort[] {
  const metrics = operatorPort('metrics', argv, env, metricsSecure(argv, env) ? ':8443' : ':8080');
  const health = operatorPort('health', argv, env, ':8081');
  return [metrics, health].filter((p): p is OperatorPort => p !== undefined && p.port !== 0);
}

/** Why `host:port` cannot be listened on (an errno code such as EADDRINUSE), or undefined when it can. */
export function bindProblem(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host: host || '0.0.0.0', port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

function describe(p: OperatorPort): string {
  const how =
    p.from === 'flag'
      ? `${p.flag} ${p.address}`
      : p.from === 'environment'
        ? `${p.variable}=${p.address}`
        : `${p.flag}, default ${p.address}`;
  return `port ${p.port} (${how})`;
}

/** A `PortInUse` CliError naming every port of `ports` that cannot be bound, or undefined when all are free. */
export async function portsInUse(ports: readonly OperatorPort[]): Promise<CliError | undefined> {
  const problems: string[] = [];
  for (const p of ports) {
    const problem = await bindProblem(p.host, p.port);
    if (!problem) continue;
    const what = problem === 'EADDRINUSE' ? 'is in use' : `cannot be listened on (${problem})`;
    const off = p.role === 'webhook' ? '' : ', or 0 to turn it off';
    problems.push(
      `${describe(p)} ${what} on this machine${problem === 'EADDRINUSE' ? ' (another opkit run of this project, or another program, listens there)' : ''}: ` +
        `stop that, or give the operator another ${p.role} port: opkit run -- ${p.flag} 127.0.0.1:<port>${off}`,
    );
  }
  if (problems.length === 0) return undefined;
  return new CliError('PortInUse', `${problems.join('; ')}; nothing was written to the cluster`);
}
