/**
 * @module commands/run-ports
 * The local ports the operator of `opkit run` will listen on — checked and chosen before the run writes anything to
 * the cluster, so a run whose operator could not listen never gets as far as touching another run's webhook
 * configurations.
 *
 * `endpointRequests` reads the operator's flags (those after `--`) and environment as its settings read them
 * (`@opkit/runtime/manager`: the last flag wins, then the environment variable; addresses by `parseBindAddress`,
 * `--metrics-secure` / `METRICS_SECURE` by `metricsServingSettings`): metrics `--metrics-bind-address` /
 * `METRICS_BIND_ADDRESS`, health `--health-probe-bind-address` / `HEALTH_PROBE_BIND_ADDRESS`, and, for a project with
 * webhooks, `--webhook-bind-address` / `WEBHOOK_BIND_ADDRESS`. The operator's own flags are passed over. A value the
 * operator would refuse is a `CliError` (`Usage`) naming the flag or variable, before anything is written: a bad
 * metrics-serving setting at once (the operator refuses it even for `--help`), an address that is not `host:port`,
 * `:port` or `0`, or the webhook server turned off, in `choosePorts` (for `--help`, which the operator answers without
 * listening, such an address counts as none).
 *
 * `choosePorts` guarantees: an address the user gave is kept as given (`0` is off; port 0 is a free port the operator
 * picks, except for the webhook server, whose port the run must know); when another live `opkit run` of this machine
 * has reserved its port (that run's operator may not listen yet) or the port cannot be bound, the run fails with a
 * `CliError` (`PortInUse`) naming the port, the flag that sets it, the other run, and how to choose another. A server
 * the user gave no address gets 127.0.0.1 — never all interfaces — on its default port (8443, or 8080 with
 * `--metrics-secure=false`; 8081) when that is free and no other live run has chosen it, else a free port of
 * 127.0.0.1 (the webhook server always a free one); no two servers share a port. `describeEndpoints` writes one line
 * per server with the URL it answers at.
 */
import { createServer } from 'node:net';
import { SettingsError, UsageError } from '@opkit/runtime';
import { metricsServingSettings, parseBindAddress } from '@opkit/runtime/manager';
import { CliError } from '../errors.ts';
import type { ReservingRun } from './run-reservations.ts';

export type PortRole = 'metrics' | 'health' | 'webhook';

/** An address the user gave one of the operator's servers: a flag after `--`, or its environment variable. */
export interface GivenAddress {
  readonly role: PortRole;
  /** `--metrics-bind-address`, … */
  readonly flag: string;
  readonly variable: string;
  /** As given: `host:port`, `:port`, `[v6]:port`. */
  readonly address: string;
  readonly from: 'flag' | 'environment';
  /** As `parseBindAddress` reads it: `0.0.0.0` for `:port` (all interfaces). */
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

/** Why `host:port` cannot be listened on (an errno code such as EADDRINUSE), or undefined when it can. */
export function bindProblem(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ host: host || '0.0.0.0', port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/** How the user gave `p`: `--flag ADDRESS` or `VARIABLE=ADDRESS`. */
const howGiven = (p: GivenAddress) => (p.from === 'flag' ? `${p.flag} ${p.address}` : `${p.variable}=${p.address}`);

/**
 * A `PortInUse` CliError naming every port of `ports` that another live run has reserved or that cannot be bound, or
 * undefined when all are free.
 */
async function unavailable(ports: readonly GivenAddress[], probe: PortProbe): Promise<CliError | undefined> {
  const problems: string[] = [];
  for (const p of ports) {
    const other = probe.reserved.get(p.port);
    let what: string;
    if (other) {
      const run = `pid ${other.pid}${other.started ? `, started ${other.started}` : ''}`;
      what = `is reserved by another opkit run on this machine (${run}), whose operator may not listen yet`;
    } else {
      const problem = await probe.bindProblem(p.host, p.port);
      if (!problem) continue;
      what =
        problem === 'EADDRINUSE'
          ? 'is in use on this machine (another opkit run of this project, or another program, listens there)'
          : `cannot be listened on (${problem}) on this machine`;
    }
    const off = p.role === 'webhook' ? '' : ', or 0 to turn it off';
    problems.push(
      `port ${p.port} (${howGiven(p)}) ${what}: ` +
        `stop that, or give the operator another ${p.role} port: opkit run -- ${p.flag} 127.0.0.1:<port>${off}`,
    );
  }
  if (problems.length === 0) return undefined;
  return new CliError('PortInUse', `${problems.join('; ')}; nothing was written to the cluster`);
}

/** One server of the operator of `opkit run`, and where it will listen. */
export interface Endpoint {
  readonly role: PortRole;
  readonly flag: string;
  readonly variable: string;
  /**
   * `flag` / `environment`: the user's address, left to the operator; `default`: opkit's loopback default;
   * `free`: a free loopback port opkit chose (the default was taken, or there is none); `off`: turned off (`0`).
   */
  readonly from: 'flag' | 'environment' | 'default' | 'free' | 'off';
  /** As given, or as opkit gives it: `host:port`, `:port`, `0`. */
  readonly address: string;
  /** As `parseBindAddress` reads it (`0.0.0.0` or `::` for all interfaces); '' when off. */
  readonly host: string;
  /** 0: a free port the operator picks itself (the user gave port 0), or off. */
  readonly port: number;
  /** When `from` is `free` instead of a default: the default port, which was taken. */
  readonly taken?: number;
  /** The value opkit run puts in `variable` for the operator: set only for an address opkit chose. */
  readonly set?: string;
  readonly url: { readonly scheme: 'http' | 'https'; readonly paths: readonly string[] };
}

/** What `opkit run` wants for one server: the user's address, or a loopback default (or any free loopback port). */
export interface EndpointRequest {
  readonly role: PortRole;
  /** The user's address; `off` for `0`; undefined when the user gave none, or one the operator refuses. */
  readonly given: GivenAddress | 'off' | undefined;
  /** Why the operator would refuse the address the user gave, naming the flag or variable. */
  readonly problem?: string;
  readonly defaultPort: number | undefined;
  readonly url: Endpoint['url'];
}

/** Where opkit run's operator listens when the user names nothing: loopback only. */
export const LOOPBACK = '127.0.0.1';

/** The address the user gave `role`'s server (the flag, else its variable), or why the operator would refuse it. */
function givenAddress(
  role: PortRole,
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Pick<EndpointRequest, 'given' | 'problem'> {
  const { flag, variable } = FLAGS[role];
  const fromFlag = lastFlag(argv, flag);
  const address = fromFlag ?? (env[variable] || undefined);
  if (address === undefined) return { given: undefined };
  const from = fromFlag !== undefined ? 'flag' : 'environment';
  const named = from === 'flag' ? `--${flag}` : variable;
  if (address === '0') {
    return role === 'webhook'
      ? { given: undefined, problem: `${named}: the webhook server cannot be turned off (0)` }
      : { given: 'off' };
  }
  try {
    return { given: { role, flag: `--${flag}`, variable, address, from, ...parseBindAddress(address) } };
  } catch (err) {
    if (!(err instanceof UsageError && err.code === 'InvalidArgument')) throw err;
    return { given: undefined, problem: `${named}: ${err.message}` };
  }
}

/**
 * The servers of the operator: metrics (default port 8443, or 8080 with `--metrics-secure=false`), health (8081)
 * and, for a project with webhooks, the webhook server (any free port) — each as the user gave it (the flags after
 * `--`, then the environment variables) or, when not given, on loopback. A metrics-serving setting the operator
 * refuses (`metricsServingSettings`) throws a `CliError` (`Usage`) with the operator's message.
 */
export function endpointRequests(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  options: { readonly webhooks: boolean },
): EndpointRequest[] {
  let secure: boolean;
  try {
    secure = metricsServingSettings(argv, env).secure !== false;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    throw new CliError('Usage', `${err.message}; nothing was written to the cluster`, { cause: err });
  }
  const out: EndpointRequest[] = [
    {
      role: 'metrics',
      ...givenAddress('metrics', argv, env),
      defaultPort: secure ? 8443 : 8080,
      url: { scheme: secure ? 'https' : 'http', paths: ['/metrics'] },
    },
    {
      role: 'health',
      ...givenAddress('health', argv, env),
      defaultPort: 8081,
      url: { scheme: 'http', paths: ['/healthz', '/readyz'] },
    },
  ];
  if (options.webhooks) {
    out.push({
      role: 'webhook',
      ...givenAddress('webhook', argv, env),
      defaultPort: undefined,
      url: { scheme: 'https', paths: [] },
    });
  }
  return out;
}

/** What choosing ports needs from the machine (fakes in tests). */
export interface PortProbe {
  /** Why `host:port` cannot be listened on, or undefined when it can (see `bindProblem`). */
  bindProblem(host: string, port: number): Promise<string | undefined>;
  /** A port of `host` that is free now. */
  freePort(host: string): Promise<number>;
  /** Ports that other live `opkit run`s have chosen (their operators may not listen yet), each with that run. */
  readonly reserved: ReadonlyMap<number, ReservingRun>;
}

/** A free port of `host`, as the kernel hands one out for port 0. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Where each server of `requests` listens. Unless `check` is false (for `--help`, which the operator answers without
 * listening; an address it would refuse then counts as none): an address the operator would refuse fails (`Usage`,
 * naming the flag or variable), and an address the user gave with a port fails (`PortInUse`) when another live run
 * has reserved that port or it cannot be listened on; it is otherwise left to the operator. Without one, the server gets its default port on 127.0.0.1 if that is free and no
 * other live run has chosen it, else a free port of 127.0.0.1 that no other run has chosen; those are the addresses
 * opkit run sets (`set`) in the operator's environment. No two servers get the same port.
 */
export async function choosePorts(
  requests: readonly EndpointRequest[],
  probe: PortProbe,
  options: { readonly check: boolean } = { check: true },
): Promise<Endpoint[]> {
  const explicit = requests.flatMap((r) => (typeof r.given === 'object' && r.given.port !== 0 ? [r.given] : []));
  if (options.check) {
    const refused = requests.find((r) => r.problem !== undefined);
    if (refused) throw new CliError('Usage', `${refused.problem}; nothing was written to the cluster`);
    const taken = await unavailable(explicit, probe);
    if (taken) throw taken;
  }
  const used = new Set<number>([...explicit.map((g) => g.port)]);
  const usable = (port: number) => !used.has(port) && !probe.reserved.has(port);
  const out: Endpoint[] = [];
  for (const r of requests) {
    const { flag, variable } = FLAGS[r.role];
    const base = { role: r.role, flag: `--${flag}`, variable, url: r.url };
    if (r.given === 'off') {
      out.push({ ...base, from: 'off', address: '0', host: '', port: 0 });
      continue;
    }
    if (r.given && r.role === 'webhook' && r.given.port === 0 && r.given.from === 'flag') {
      throw new CliError(
        'Usage',
        `${r.given.flag} ${r.given.address}: opkit run points the webhook configurations at the webhook port, so it must know it: give a port, or leave the flag out for a free one`,
      );
    }
    if (r.given && !(r.role === 'webhook' && r.given.port === 0)) {
      const { address, host, port } = r.given;
      out.push({ ...base, from: r.given.from, address, host, port });
      continue;
    }
    let port: number | undefined;
    if (r.defaultPort !== undefined && usable(r.defaultPort)) {
      if ((await probe.bindProblem(LOOPBACK, r.defaultPort)) === undefined) port = r.defaultPort;
    }
    const from = port === undefined ? 'free' : 'default';
    for (let tries = 0; port === undefined; tries++) {
      const candidate = await probe.freePort(LOOPBACK);
      if (usable(candidate)) port = candidate;
      else if (tries >= 50) {
        throw new CliError(
          'PortInUse',
          `no free port on ${LOOPBACK} for the operator's ${r.role} server that another opkit run has not taken; nothing was written to the cluster`,
        );
      }
    }
    used.add(port);
    const address = `${LOOPBACK}:${port}`;
    out.push({
      ...base,
      from,
      address,
      host: LOOPBACK,
      port,
      set: address,
      ...(from === 'free' && r.defaultPort !== undefined ? { taken: r.defaultPort } : {}),
    });
  }
  return out;
}

const ALL_INTERFACES = new Set(['', '0.0.0.0', '::']);

/** The URL a server on `host:port` answers at from this machine (`127.0.0.1` / `[::1]` for all interfaces). */
export function localUrl(scheme: string, host: string, port: number): string {
  const h = host === '' || host === '0.0.0.0' ? LOOPBACK : host === '::' ? '::1' : host;
  return `${scheme}://${h.includes(':') ? `[${h}]` : h}:${port}`;
}

/**
 * One line per server: where it listens, and why there when opkit did not simply use its default
 * (`metrics: https://127.0.0.1:8443/metrics`, `health: http://127.0.0.1:38411/healthz and /readyz (port 8081 is taken)`).
 */
export function describeEndpoints(endpoints: readonly Endpoint[]): string[] {
  return endpoints.map((e) => {
    const name = e.role === 'webhook' ? 'webhooks' : e.role;
    if (e.from === 'off') return `${name}: off`;
    const how = e.from === 'environment' ? `${e.variable}=${e.address}` : `${e.flag} ${e.address}`;
    if (e.port === 0) return `${name}: on a free port the operator chooses (${how})`;
    const at = `${localUrl(e.url.scheme, e.host, e.port)}${e.url.paths.join(' and ')}`;
    const notes: string[] = [];
    if (e.from === 'free' && e.taken !== undefined) notes.push(`port ${e.taken} is taken`);
    if (e.from === 'flag' || e.from === 'environment') {
      notes.push(`${how}${ALL_INTERFACES.has(e.host) ? ', all interfaces' : ''}`);
    }
    if (e.role === 'metrics' && e.url.scheme === 'https') notes.push('a bearer token allowed to get /metrics');
    return `${name}: ${at}${notes.length > 0 ? ` (${notes.join('; ')})` : ''}`;
  });
}
