/**
 * @module nodes
 * The fake nodes of an environment: Node objects that kwok manages (the `kwok.x-k8s.io/node: fake` annotation), named
 * `kwok-node-<i>`, each with 32 CPUs, 256 GiB of memory and the pod capacity asked for.
 *
 * Guarantees: `createFakeNodes` accepts a node that already exists (409); `clusterSettled` is true only when every
 * node is Ready and the `default` ServiceAccount exists, so pods can be created.
 */
import type { ApiClient } from './api.ts';
import { TestenvError } from './errors.ts';

/** Creates `count` fake nodes with `podsPerNode` pods of capacity each; `ApiRequestFailed` when one is refused. */
export async function createFakeNodes(api: ApiClient, count: number, podsPerNode: number): Promise<void> {
  const pods = String(podsPerNode);
  const resources = { cpu: '32', memory: '256Gi', pods, 'ephemeral-storage': '1Ti' };
  await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const name = `kwok-node-${i}`;
      const res = await api.request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name,
            annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
            labels: {
              'kubernetes.io/arch': 'amd64',
              'kubernetes.io/hostname': name,
              'kubernetes.io/os': 'linux',
              'kubernetes.io/role': 'agent',
              'node-role.kubernetes.io/agent': '',
              type: 'kwok',
            },
          },
          status: { allocatable: resources, capacity: resources },
        },
      });
      if (res.status !== 201 && res.status !== 409) {
        throw new TestenvError('ApiRequestFailed', `creating node ${name}: ${res.status} ${res.text}`);
      }
    }),
  );
}

/** True when at least `count` nodes are Ready and the `default` ServiceAccount exists. */
export async function clusterSettled(api: ApiClient, count: number): Promise<boolean> {
  const list = await api.request<{ items?: { status?: { conditions?: { type: string; status: string }[] } }[] }>({
    path: '/api/v1/nodes',
  });
  const ready = (list.body.items ?? []).filter((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  ).length;
  if (ready < count) return false;
  const sa = await api.request({ path: '/api/v1/namespaces/default/serviceaccounts/default' });
  return sa.status === 200;
}
