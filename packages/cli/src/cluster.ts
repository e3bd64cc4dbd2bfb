/**
 * @module cluster
 * Is the cluster of the current kubeconfig reachable? Loads the kubeconfig the way kubectl does ($KUBECONFIG,
 * ~/.kube/config, in-cluster) and asks the apiserver for `/api` with the configured credentials, with a short timeout.
 * Never throws: an unreachable, unauthenticated or missing cluster is an answer with a reason.
 */
import { existsSync } from 'node:fs';
import { request } from 'node:https';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

/** The answer of `probeCurrentCluster`: the apiserver's URL and the context when it answered, else why not. */
export type ClusterProbe =
  | { readonly reachable: true; readonly server: string; readonly context: string }
  | { readonly reachable: false; readonly reason: string };

/**
 * Whether the cluster of the current kubeconfig (as kubectl finds it, or in-cluster) answers `GET /api` with the
 * configured credentials within `timeoutMs` (default 3 s). Never rejects: a missing, unreadable or unreachable cluster
 * is an answer with a reason.
 */
export async function probeCurrentCluster(timeoutMs = 3_000): Promise<ClusterProbe> {
  const explicit = process.env.KUBECONFIG;
  const inCluster = existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');
  if (!explicit && !inCluster && !existsSync(join(homedir(), '.kube', 'config'))) {
    return { reachable: false, reason: 'no kubeconfig ($KUBECONFIG is unset and ~/.kube/config does not exist)' };
  }
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
  } catch (err) {
    return { reachable: false, reason: `the kubeconfig cannot be read: ${(err as Error).message}` };
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) return { reachable: false, reason: `the kubeconfig's current context names no cluster` };
  const url = new URL('/api', cluster.server);
  const opts: Parameters<typeof request>[1] = { method: 'GET', timeout: timeoutMs, headers: {} };
  try {
    await kc.applyToHTTPSOptions(opts);
  } catch (err) {
    return { reachable: false, reason: `the kubeconfig's credentials cannot be used: ${(err as Error).message}` };
  }
  const status = await new Promise<number | string>((resolve) => {
    const req = request(url, opts, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => {
      resolve(`no answer within ${timeoutMs} ms`);
      req.destroy();
    });
    req.on('error', (err) => resolve(err.message));
    req.end();
  });
  if (status === 200) return { reachable: true, server: cluster.server, context: kc.getCurrentContext() };
  return {
    reachable: false,
    reason: `${cluster.server} (context ${kc.getCurrentContext()}) answered ${typeof status === 'number' ? `HTTP ${status}` : status}`,
  };
}
