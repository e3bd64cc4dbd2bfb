/**
 * @module commands/run-cluster
 * Which cluster a command talks to.
 *
 * `chooseRunCluster` (for `opkit run`, which writes only CRDs and its own webhook configurations, to a dev cluster)
 * decides, in this order:
 * 1. `--kubeconfig FILE`: that file's cluster; `--cluster NAME`: the local cluster `opkit env up --name NAME`
 *    started. Giving both is a usage error. An unknown or malformed NAME is a usage error naming `--cluster` and the
 *    local clusters there are, with their state; a named cluster that is not up, or does not answer, fails naming
 *    it and what to do. Neither is ever replaced by another cluster.
 * 2. `KUBECONFIG` set: its cluster, when it answers; when it does not, the local cluster that is up, if exactly one is.
 * 3. `KUBECONFIG` unset: the local cluster that is up, if exactly one is; with several, a usage error naming them and
 *    `--cluster`; with none, the default kubeconfig (`~/.kube/config`, or in-cluster), when it answers.
 * Every cluster chosen has answered `GET /api/v1` (3 s timeout) before it is returned, and the result says in words
 * which cluster it is and why it was chosen. The probe and the list of local clusters are injected (`ClusterChoice`),
 * so the decision itself is tested without a cluster.
 *
 * `currentCluster` (for `opkit deploy` / `undeploy`) uses `--kubeconfig` or the current kubeconfig only and never
 * switches clusters: a cluster that does not answer is an error naming it (and the local clusters that are up, as a
 * hint).
 */
import { loadConfig } from '@opkit/runtime/client';
import { answersApiV1 } from '../cluster.ts';
import { describeLocalCluster, type LocalCluster, localClusters } from '../env/state.ts';
import { CliError } from '../errors.ts';

/** Whether the cluster of a kubeconfig (a file, or undefined for the default loading rules) answers. */
export type ClusterProbeResult =
  | { readonly ok: true; readonly server: string }
  | { readonly ok: false; readonly server: string | undefined; readonly reason: string };

export type Probe = (kubeconfig: string | undefined) => Promise<ClusterProbeResult>;

export interface ClusterChoice {
  readonly kubeconfigFlag: string | undefined;
  readonly clusterFlag: string | undefined;
  /** `KUBECONFIG` ('' counts as unset). */
  readonly kubeconfigEnv: string | undefined;
  readonly clusters: readonly LocalCluster[];
  readonly probe: Probe;
}

export interface RunTarget {
  /** The kubeconfig file to pass on, or undefined for the default loading rules (`KUBECONFIG`, `~/.kube/config`). */
  readonly path: string | undefined;
  readonly server: string;
  /** Which cluster, and why: `local cluster "dev" (--cluster dev)`. */
  readonly chosen: string;
  /** The name of the local cluster of `opkit env up`, when it is one. */
  readonly local?: string;
}

/** The rule `opkit env up --name` applies to a cluster name. */
export const CLUSTER_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The first line of an error's message. */
const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';

/** Asks the cluster of `kubeconfig` for `/api/v1` with its credentials, with a 3 s timeout. Never throws. */
export const probeKubeconfig: Probe = async (kubeconfig) => {
  let server: string | undefined;
  try {
    const config = await loadConfig(kubeconfig ? { path: kubeconfig } : {});
    server = config.server;
    await answersApiV1(config);
    return { ok: true, server: config.server };
  } catch (err) {
    return { ok: false, server, reason: firstLine(err) };
  }
};

function listing(clusters: readonly LocalCluster[]): string {
  return clusters.length === 0
    ? 'there are none'
    : `there are ${clusters.map((c) => `"${c.name}" (${describeLocalCluster(c)})`).join(', ')}`;
}

const startHint = (name: string) => `npx opkit env up${name === 'default' ? '' : ` --name ${name}`}`;

/** A local cluster that is up and answers, as a target; fails naming it otherwise. */
async function localTarget(
  cluster: LocalCluster & { readonly up: NonNullable<LocalCluster['up']> },
  probe: Probe,
  why: string,
): Promise<RunTarget> {
  const kubeconfig = cluster.up.kubeconfigPath;
  const answer = await probe(kubeconfig);
  if (!answer.ok) {
    throw new CliError(
      'ClusterNotRunning',
      `local cluster "${cluster.name}" (${cluster.up.server}) does not answer: ${answer.reason}; see npx opkit env status${cluster.name === 'default' ? '' : ` --name ${cluster.name}`}`,
    );
  }
  return {
    path: kubeconfig,
    server: answer.server,
    chosen: `local cluster "${cluster.name}" (${why})`,
    local: cluster.name,
  };
}

/** The cluster `--cluster NAME` names, or a usage error naming the flag and the clusters there are. */
async function namedCluster(name: string, c: ClusterChoice): Promise<RunTarget> {
  if (!CLUSTER_NAME.test(name)) {
    throw new CliError(
      'UnknownCluster',
      `--cluster "${name}" is not a cluster name (lower-case letters, digits and '-', as opkit env up --name takes); local clusters: ${listing(c.clusters)}`,
    );
  }
  const cluster = c.clusters.find((x) => x.name === name);
  if (!cluster) {
    throw new CliError(
      'UnknownCluster',
      `--cluster ${name}: no local cluster has that name (local clusters: ${listing(c.clusters)}); start it with ${startHint(name)}`,
    );
  }
  if (!isUp(cluster)) {
    const what = describeLocalCluster(cluster);
    const remedy =
      what === 'not running'
        ? `start it with ${startHint(name)}`
        : what === 'failed'
          ? `see npx opkit env status${name === 'default' ? '' : ` --name ${name}`}, then npx opkit env down and up again`
          : `wait for its "opkit env up" to finish`;
    throw new CliError('ClusterNotRunning', `--cluster ${name}: local cluster "${name}" is ${what}: ${remedy}`);
  }
  return localTarget(cluster, c.probe, `--cluster ${name}`);
}

const isUp = (c: LocalCluster): c is LocalCluster & { readonly up: NonNullable<LocalCluster['up']> } =>
  c.up !== undefined;

/** The one local cluster that is up; several are a usage error naming them and --cluster; none is undefined. */
async function onlyLocalCluster(c: ClusterChoice, why: string): Promise<RunTarget | undefined> {
  const up = c.clusters.filter(isUp);
  if (up.length > 1) {
    throw new CliError(
      'ClusterAmbiguous',
      `${up.length} local clusters are running (${up.map((x) => `"${x.name}" at ${x.up.server}`).join(', ')}) and ${why}: choose one with --cluster NAME (e.g. opkit run --cluster ${up[0]?.name}), or set KUBECONFIG`,
    );
  }
  const only = up[0];
  return only ? localTarget(only, c.probe, `the only local cluster running; ${why}`) : undefined;
}

/** The cluster `opkit run` uses (see the module comment for the rules). */
export async function chooseRunCluster(c: ClusterChoice): Promise<RunTarget> {
  if (c.kubeconfigFlag !== undefined && c.clusterFlag !== undefined) {
    throw new CliError('Usage', '--cluster and --kubeconfig both choose the cluster: give one of them');
  }
  if (c.kubeconfigFlag !== undefined) {
    const answer = await c.probe(c.kubeconfigFlag);
    if (!answer.ok) {
      throw new CliError('ClusterNotRunning', `the cluster of ${c.kubeconfigFlag} does not answer: ${answer.reason}`);
    }
    return { path: c.kubeconfigFlag, server: answer.server, chosen: `the cluster of --kubeconfig ${c.kubeconfigFlag}` };
  }
  if (c.clusterFlag !== undefined) return namedCluster(c.clusterFlag, c);
  const env = c.kubeconfigEnv || undefined;
  if (env) {
    const answer = await c.probe(undefined);
    if (answer.ok) {
      const local = c.clusters.find((x) => x.up?.kubeconfigPath === env);
      return {
        path: undefined,
        server: answer.server,
        chosen: local ? `local cluster "${local.name}" (KUBECONFIG)` : `the cluster of KUBECONFIG=${env}`,
        ...(local ? { local: local.name } : {}),
      };
    }
    const why = `the cluster of KUBECONFIG=${env}${answer.server ? ` (${answer.server})` : ''} does not answer: ${answer.reason}`;
    const local = await onlyLocalCluster(c, why);
    if (local) return local;
    throw new CliError(
      'ClusterNotRunning',
      `no cluster answers (${why}, and no local cluster is running): start one with "npx opkit env up", or set KUBECONFIG`,
    );
  }
  const local = await onlyLocalCluster(c, 'KUBECONFIG is unset');
  if (local) return local;
  const answer = await c.probe(undefined);
  if (answer.ok) {
    return {
      path: undefined,
      server: answer.server,
      chosen: 'the default kubeconfig (KUBECONFIG is unset and no local cluster is running)',
    };
  }
  throw new CliError(
    'ClusterNotRunning',
    `no cluster answers (KUBECONFIG is unset, no local cluster is running${c.clusters.length > 0 ? ` — ${listing(c.clusters)}` : ''}, and the default kubeconfig: ${answer.reason}): start one with "npx opkit env up", or set KUBECONFIG`,
  );
}

/** `chooseRunCluster` with this process's flags' values, environment and local clusters, and the real probe. */
export async function runCluster(flags: { kubeconfig?: string | undefined; cluster?: string | undefined }) {
  return chooseRunCluster({
    kubeconfigFlag: flags.kubeconfig,
    clusterFlag: flags.cluster,
    kubeconfigEnv: process.env.KUBECONFIG,
    clusters: await localClusters(),
    probe: probeKubeconfig,
  });
}

/**
 * The cluster `opkit deploy` and `undeploy` write to: `--kubeconfig`, or the current kubeconfig, when it answers.
 * Never another one: a cluster that does not answer is an error naming it, with the local clusters that are up as a
 * hint.
 */
export async function currentCluster(
  explicit: string | undefined,
): Promise<{ path: string | undefined; server: string }> {
  const answer = await probeKubeconfig(explicit);
  if (answer.ok) return { path: explicit ?? process.env.KUBECONFIG, server: answer.server };
  if (explicit) throw new CliError('ClusterNotRunning', `the cluster of ${explicit} does not answer: ${answer.reason}`);
  const up = (await localClusters()).filter(isUp);
  throw new CliError(
    'ClusterNotRunning',
    `${answer.server ? `the cluster of the current kubeconfig (${answer.server}) does not answer` : 'no cluster to write to'}: ` +
      `${answer.reason}; opkit never switches to another cluster for a command that writes: start that cluster, or ` +
      `choose one with --kubeconfig or KUBECONFIG${up.length > 0 ? ` (opkit env up's: ${up.map((x) => `--kubeconfig ${x.up.kubeconfigPath}${up.length > 1 ? ` for "${x.name}"` : ''}`).join(', ')})` : ''}`,
  );
}
