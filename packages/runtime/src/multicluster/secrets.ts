/**
 * @module multicluster/secrets
 * `kubeconfigSecrets`: member clusters from kubeconfig Secrets in one namespace of the hub, watched. Two layouts:
 * - `opkit` (default): Secrets labelled `opkit.dev/kubeconfig: "true"`, the kubeconfig under the key `kubeconfig`; the
 *   cluster is named by the label `opkit.dev/cluster`, else by the Secret's name.
 * - `cluster-api`: the `<cluster>-kubeconfig` Secrets Cluster API writes (label `cluster.x-k8s.io/cluster-name`, key
 *   `value`); the cluster is named by that label. Its other Secrets of a cluster (`-ca`, `-etcd`, `-sa`, `-proxy`) are
 *   skipped, and their data is not kept.
 *
 * Guarantees: only the namespace's Secrets of the layout are read (a namespaced, label-selected watch: the operator
 * needs `get`, `list` and `watch` on Secrets there, nothing cluster-wide). A kubeconfig from a Secret may not name
 * files or run commands on the operator's machine (client/kubeconfig-text.ts): its author need not be the operator's.
 * A Secret that cannot be read as a cluster is reported as a problem naming the Secret and the key, never its data; two
 * Secrets naming one cluster are both problems.
 */
import { Cache } from '../cache/cache.ts';
import type { Secret } from '../client/kinds/core.ts';
import { Secrets } from '../client/kinds/index.ts';
import { kubeconfigFromText } from '../client/kubeconfig-text.ts';
import { UsageError } from '../errors.ts';
import { untilAborted } from '../internal/sleep.ts';
import { FleetError } from './errors.ts';
import { badClusterName, type ClusterEntry, type ClusterProvider, fingerprintOf } from './provider.ts';

/** Options of `kubeconfigSecrets`. */
export interface SecretsOptions {
  /** The hub's namespace the Secrets are in. */
  readonly namespace: string;
  /** `opkit` (default) or `cluster-api` (see the module comment). */
  readonly layout?: 'opkit' | 'cluster-api';
}

const LAYOUTS = {
  opkit: { selector: 'opkit.dev/kubeconfig=true', key: 'kubeconfig', nameLabel: 'opkit.dev/cluster' },
  'cluster-api': {
    selector: 'cluster.x-k8s.io/cluster-name',
    key: 'value',
    nameLabel: 'cluster.x-k8s.io/cluster-name',
  },
} as const;

/** Member clusters from kubeconfig Secrets in the hub (see the module comment). */
export function kubeconfigSecrets(options: SecretsOptions): ClusterProvider {
  const layout = LAYOUTS[options.layout ?? 'opkit'];
  if (layout === undefined)
    throw new UsageError('InvalidArgument', `layout must be opkit or cluster-api, not ${String(options.layout)}`);
  const where = `Secrets in ${options.namespace} labelled ${layout.selector}`;
  return {
    description: `kubeconfig ${where}`,
    async run({ report, signal, log, hub }) {
      const cache = new Cache({
        client: hub,
        namespace: options.namespace,
        byResource: {
          secrets: {
            labelSelector: layout.selector,
            transform: (s) => (isKubeconfig(s as Secret, layout) ? s : withoutData(s as Secret)),
          },
        },
        dropManagedFields: true,
        staleness: false,
      });
      const informer = cache.informer(Secrets);
      let scheduled = false;
      const read = () => {
        scheduled = false;
        report(clustersOf(informer.store.list() as Secret[], layout, (m) => log.debug({ secret: m }, 'skipped')));
      };
      const changed = () => {
        if (!scheduled && informer.hasSynced) {
          scheduled = true;
          queueMicrotask(read);
        }
      };
      const off = informer.addEventHandler({ add: changed, update: changed, delete: changed });
      cache.start(signal);
      if (await informer.waitForSync(signal)) read();
      await untilAborted(signal);
      off();
      await informer.stopped();
    },
  };
}

/**
 * Whether a Secret of the selector is a kubeconfig of the layout: Cluster API labels its `-ca`, `-etcd`, `-sa` and
 * `-proxy` Secrets alike, and only `<cluster>-kubeconfig` holds a kubeconfig.
 */
function isKubeconfig(s: Secret, layout: (typeof LAYOUTS)[keyof typeof LAYOUTS]): boolean {
  return layout.key !== 'value' || s.metadata?.name === `${s.metadata?.labels?.[layout.nameLabel]}-kubeconfig`;
}

/** A Secret without its data: the others' keys are never kept. */
const withoutData = (s: Secret): Secret => ({ ...s, data: {} });

/** The clusters of `secrets`, and why each other one is not one. */
function clustersOf(
  secrets: readonly Secret[],
  layout: (typeof LAYOUTS)[keyof typeof LAYOUTS],
  skipped: (name: string) => void,
) {
  const clusters = new Map<string, ClusterEntry>();
  const problems = new Map<string, string>();
  const claimed = new Map<string, string>();
  const ordered = [...secrets].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  for (const s of ordered.filter((x) => isKubeconfig(x, layout))) {
    const secret = `Secret ${s.metadata?.namespace}/${s.metadata?.name}`;
    const name = s.metadata?.labels?.[layout.nameLabel] || s.metadata?.name || '';
    const data = s.data?.[layout.key];
    try {
      const bad = badClusterName(name);
      if (bad) throw new FleetError('InvalidCluster', `${secret}: ${bad}`);
      if (data === undefined) throw new FleetError('InvalidCluster', `${secret} has no key ${layout.key}`);
      const other = claimed.get(name);
      if (other !== undefined) {
        clusters.delete(name);
        problems.set(other, `${other} and ${secret} both name cluster ${name}: relabel one`);
        throw new FleetError('InvalidCluster', `${secret} and ${other} both name cluster ${name}: relabel one`);
      }
      claimed.set(name, secret);
      const text = Buffer.from(data, 'base64').toString('utf8');
      const config = kubeconfigFromText(text, { source: `${secret}, key ${layout.key}` });
      clusters.set(name, { config, fingerprint: fingerprintOf(text) });
    } catch (err) {
      skipped(secret);
      problems.set(name && !problems.has(name) ? name : secret, (err as Error).message);
    }
  }
  return { clusters, problems };
}
