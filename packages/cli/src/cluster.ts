/**
 * @module cluster
 * Is the cluster of the current kubeconfig reachable? Loads the kubeconfig the way kubectl does ($KUBECONFIG,
 * ~/.kube/config, in-cluster) with the runtime's `loadConfig`, and asks the apiserver for `/api/v1` with the
 * configured credentials and the runtime's client, within a short deadline (retries included).
 * Never throws: an unreachable, unauthenticated or missing cluster is an answer with a reason.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Client, type ConnectionConfig, loadConfig } from '@opkit/runtime/client';

/** The answer of `probeCurrentCluster`: the apiserver's URL and the context when it answered, else why not. */
export type ClusterProbe =
  | { readonly reachable: true; readonly server: string; readonly context: string }
  | { readonly reachable: false; readonly reason: string };

/**
 * Whether the cluster of the current kubeconfig (as kubectl finds it, or in-cluster) answers `GET /api/v1` with the
 * configured credentials within `timeoutMs` (default 3 s). Never rejects: a missing, unreadable or unreachable cluster
 * is an answer with a reason.
 */
export async function probeCurrentCluster(timeoutMs = 3_000): Promise<ClusterProbe> {
  const explicit = process.env.KUBECONFIG;
  const inCluster = existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');
  if (!explicit && !inCluster && !existsSync(join(homedir(), '.kube', 'config'))) {
    return { reachable: false, reason: 'no kubeconfig ($KUBECONFIG is unset and ~/.kube/config does not exist)' };
  }
  let config: ConnectionConfig;
  try {
    config = await loadConfig();
  } catch (err) {
    return { reachable: false, reason: `the kubeconfig cannot be used: ${(err as Error).message}` };
  }
  try {
    await answersApiV1(config, timeoutMs);
    return { reachable: true, server: config.server, context: config.contextName };
  } catch (err) {
    return { reachable: false, reason: `${config.server} (context ${config.contextName}): ${(err as Error).message}` };
  }
}

/** Resolves once `config`'s cluster answers `/api/v1` with its credentials within `timeoutMs`; rejects otherwise. */
export async function answersApiV1(config: ConnectionConfig, timeoutMs = 3_000): Promise<void> {
  const client = new Client(config, { name: 'opkit-probe', timeoutMs });
  try {
    await client.serverResources('v1');
  } finally {
    client.close();
  }
}
