/**
 * @module env/state
 * Where a dev cluster started by `opkit env up` lives: `$XDG_STATE_HOME/opkit/clusters/<name>` (default
 * `~/.local/state/opkit/clusters/<name>`, overridable with `OPKIT_STATE_DIR`, which replaces `…/opkit`). It holds
 * `daemon.json` (the background process that owns the cluster), `daemon.log`, `status.json` (starting / ready /
 * failed) and `cluster/`, the run directory with the kubeconfig.
 *
 * `localClusters` lists every cluster that has a state directory, sorted by name, with whether its daemon is alive
 * (its pid answers and its command line names that directory: a reused pid is not mistaken for it) and its status.
 * Only a cluster whose daemon is alive and whose status is `ready` with a server and a kubeconfig is `up`.
 */
import { readdir, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface ClusterStatus {
  readonly phase: 'starting' | 'ready' | 'failed';
  readonly server?: string;
  readonly kubeconfigPath?: string;
  readonly nodes?: number;
  readonly pids?: Readonly<Record<string, number>>;
  readonly error?: string;
  readonly readySeconds?: number;
}

export interface DaemonInfo {
  readonly pid: number;
  readonly startedAt: string;
}

/** opkit's state directory: `OPKIT_STATE_DIR`, else `$XDG_STATE_HOME/opkit`, else `~/.local/state/opkit`. */
export function stateRoot(env: NodeJS.ProcessEnv = process.env): string {
  return (
    env.OPKIT_STATE_DIR ??
    join(
      env.XDG_STATE_HOME && env.XDG_STATE_HOME.length > 0 ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state'),
      'opkit',
    )
  );
}

export function stateDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(stateRoot(env), 'clusters', name);
}

export const paths = (dir: string) => ({
  daemon: join(dir, 'daemon.json'),
  log: join(dir, 'daemon.log'),
  status: join(dir, 'status.json'),
  cluster: join(dir, 'cluster'),
});

export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The daemon's pid when it is alive, after checking that the pid is really the daemon of the cluster in `dir`. */
export async function runningDaemon(dir: string): Promise<number | undefined> {
  const info = await readJson<DaemonInfo>(paths(dir).daemon);
  if (!info) return undefined;
  const cmdline = await readFile(`/proc/${info.pid}/cmdline`, 'utf8').catch(() => '');
  return cmdline.includes(dir) ? info.pid : undefined;
}

/** A cluster of `opkit env up`, as its state directory tells. */
export interface LocalCluster {
  readonly name: string;
  /** Its daemon is alive. */
  readonly running: boolean;
  readonly status: ClusterStatus | undefined;
  /** Set when it can be used: running, and ready with a server and a kubeconfig. */
  readonly up: { readonly server: string; readonly kubeconfigPath: string } | undefined;
}

/** `ready at https://…`, `starting`, `failed`, `not running`: what `opkit env status` would say, in a few words. */
export function describeLocalCluster(c: LocalCluster): string {
  if (!c.running) return 'not running';
  if (c.up) return `ready at ${c.up.server}`;
  return c.status?.phase ?? 'starting';
}

/** Every cluster with a state directory, sorted by name. */
export async function localClusters(env: NodeJS.ProcessEnv = process.env): Promise<LocalCluster[]> {
  const base = join(stateRoot(env), 'clusters');
  const entries = await readdir(base, { withFileTypes: true }).catch(() => []);
  const out: LocalCluster[] = [];
  for (const name of entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort()) {
    const dir = join(base, name);
    const running = (await runningDaemon(dir)) !== undefined;
    const status = await readJson<ClusterStatus>(paths(dir).status);
    const up =
      running && status?.phase === 'ready' && status.server && status.kubeconfigPath
        ? { server: status.server, kubeconfigPath: status.kubeconfigPath }
        : undefined;
    out.push({ name, running, status, up });
  }
  return out;
}
