/**
 * @module env/state
 * Where a dev cluster started by `opkit env up` lives: `$XDG_STATE_HOME/opkit/clusters/<name>` (default
 * `~/.local/state/opkit/clusters/<name>`, overridable with `OPKIT_STATE_DIR`). It holds `daemon.json` (the background
 * process that owns the cluster), `daemon.log`, `status.json` (starting / ready / failed) and `cluster/`, the run
 * directory with the kubeconfig.
 */
import { readFile } from 'node:fs/promises';
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

export function stateDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  const base =
    env.OPKIT_STATE_DIR ??
    join(
      env.XDG_STATE_HOME && env.XDG_STATE_HOME.length > 0 ? env.XDG_STATE_HOME : join(homedir(), '.local', 'state'),
      'opkit',
    );
  return join(base, 'clusters', name);
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
