/**
 * @module multicluster/provider
 * Where a fleet's member clusters come from. A `ClusterProvider` reports the whole set of clusters each time it
 * changes (level-triggered: the fleet engages what is new, disengages what is gone and re-engages what changed), with
 * the entries it could not read and why. Two providers are here: `staticClusters` (a fixed list) and
 * `kubeconfigFolder` (a folder of kubeconfig files, watched: a Secret mounted as a volume works); `kubeconfigSecrets`
 * (multicluster/secrets.ts) reads Secrets in the hub.
 *
 * Guarantees: a cluster's name is a lower-case DNS subdomain (it labels metrics and logs); an entry that is not is
 * reported as a problem, never engaged. A changed kubeconfig changes the entry's fingerprint, so the fleet re-engages
 * it. A provider never logs a credential: problems name the file or Secret and the field.
 */
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from '../client/client.ts';
import { type ConnectionConfig, loadConfig } from '../client/kubeconfig.ts';
import { kubeconfigFromText } from '../client/kubeconfig-text.ts';
import { sleep, untilAborted } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';
import { FleetError } from './errors.ts';

/** One member cluster, as a provider reads it. */
export interface ClusterEntry {
  /** How to reach it. */
  readonly config: ConnectionConfig;
  /** Changes when its config does (a hash of the kubeconfig): the fleet then engages it anew. */
  readonly fingerprint: string;
}

/** What a provider reports: the clusters it reads now, and the entries it cannot read, each with why. */
export interface ClusterReport {
  /** By name. */
  readonly clusters: ReadonlyMap<string, ClusterEntry>;
  /** By name (or file): why that entry is not a cluster, e.g. `eu-1.kubeconfig is not valid YAML: …`. */
  readonly problems: ReadonlyMap<string, string>;
}

/** What a provider is given to run with. */
export interface ProviderContext {
  /** Reports the whole current set (call it again on every change; the first call ends the fleet's start-up). */
  readonly report: (report: ClusterReport) => void;
  /** Aborts when the fleet stops: `run` then resolves. */
  readonly signal: AbortSignal;
  /** The fleet's logger. */
  readonly log: Logger;
  /** The manager's own cluster (the hub), e.g. to read Secrets from. */
  readonly hub: Client;
}

/** A source of member clusters (see the module comment). */
export interface ClusterProvider {
  /** What it reads, for logs and `fleet.status()` (e.g. `kubeconfig folder /etc/fleet`). */
  readonly description: string;
  /** Reports clusters until `signal` aborts; rejecting is a fault of the provider, and the fleet runs it again. */
  run(context: ProviderContext): Promise<void>;
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** Why `name` cannot name a cluster, or undefined. */
export function badClusterName(name: string): string | undefined {
  return name.length <= 253 && NAME.test(name)
    ? undefined
    : `"${name}" cannot name a cluster: use lower-case letters, digits, "-" and "." (at most 253)`;
}

/** A hash of a kubeconfig's text. */
export const fingerprintOf = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 16);

/**
 * A fixed set of clusters, each a kubeconfig file (read as `loadConfig({ path })` reads it, when the fleet starts) or
 * a connection config.
 */
export function staticClusters(clusters: Readonly<Record<string, string | ConnectionConfig>>): ClusterProvider {
  return {
    description: `static clusters ${Object.keys(clusters).join(', ')}`,
    async run({ report, signal }) {
      const found = new Map<string, ClusterEntry>();
      const problems = new Map<string, string>();
      for (const [name, source] of Object.entries(clusters)) {
        const bad = badClusterName(name);
        if (bad) {
          problems.set(name, bad);
          continue;
        }
        try {
          if (typeof source !== 'string') found.set(name, { config: source, fingerprint: 'static' });
          else
            found.set(name, {
              config: await loadConfig({ path: source }),
              fingerprint: fingerprintOf(await readFile(source, 'utf8')),
            });
        } catch (err) {
          problems.set(name, (err as Error).message);
        }
      }
      report({ clusters: found, problems });
      await untilAborted(signal);
    },
  };
}

/** Extensions a kubeconfig file in a folder may have; the name is the file's without it. */
const EXTENSIONS = ['.kubeconfig', '.yaml', '.yml', '.json', '.conf'];

/** Options of `kubeconfigFolder`. */
export interface FolderOptions {
  /** How often the folder is read again besides its change events (default 5 s). */
  readonly intervalMs?: number;
}

/**
 * A folder of kubeconfig files, one cluster each, named as the file without its extension (`eu-1.kubeconfig` →
 * `eu-1`; a file without extension, as a Secret mounted as a volume has, keeps its name). Files whose name starts
 * with `.` are skipped (editors' files, a mounted Secret's `..data`). The folder is read again on each change event and
 * every `intervalMs`; a folder that does not exist (yet) is a problem, read again until it does. A folder that was read
 * and then cannot be (a failing mount) makes the provider fail, so the fleet keeps its clusters and runs it again. A kubeconfig in it may
 * name files relative to itself and run `exec` plugins: it is the operator's own admin's.
 */
export function kubeconfigFolder(dir: string, options: FolderOptions = {}): ClusterProvider {
  const intervalMs = options.intervalMs ?? 5_000;
  return {
    description: `kubeconfig folder ${dir}`,
    async run({ report, signal }) {
      let last: string | undefined;
      let wasRead = false;
      let failed: FleetError | undefined;
      let scanning = Promise.resolve();
      // one scan at a time, in order: a change event's and the timer's never report an older set after a newer one
      const scan = () => {
        scanning = scanning.then(async () => {
          const next = await readFolder(dir);
          // a folder that cannot be read any more keeps its clusters: the provider fails, and the fleet runs it again
          if (next.unreadable && wasRead) failed ??= new FleetError('InvalidCluster', next.unreadable);
          wasRead ||= next.unreadable === undefined;
          const key = JSON.stringify([[...next.clusters].map(([n, e]) => [n, e.fingerprint]), [...next.problems]]);
          if (failed || key === last) return;
          last = key;
          report(next);
        });
        return scanning;
      };
      let watcher: ReturnType<typeof watch> | undefined;
      let pending: NodeJS.Timeout | undefined;
      const onChange = () => {
        clearTimeout(pending);
        pending = setTimeout(() => void scan(), 100);
      };
      while (!signal.aborted) {
        await scan();
        if (failed) break;
        if (!watcher) {
          try {
            watcher = watch(dir, { signal }, onChange);
            watcher.on('error', () => {
              watcher?.close();
              watcher = undefined;
            });
          } catch {
            // no folder yet: the next scan tries again
          }
        }
        await sleep(intervalMs, signal);
      }
      clearTimeout(pending);
      watcher?.close();
      if (failed) throw failed;
    },
  };
}

/** The clusters a folder holds now; `unreadable` says why the folder itself cannot be read. */
async function readFolder(dir: string): Promise<ClusterReport & { unreadable?: string }> {
  const clusters = new Map<string, ClusterEntry>();
  const problems = new Map<string, string>();
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  } catch (err) {
    const why = `the folder ${dir} cannot be read: ${(err as NodeJS.ErrnoException).code ?? err}`;
    problems.set(dir, why);
    return { clusters, problems, unreadable: why };
  }
  for (const file of names) {
    const path = join(dir, file);
    const ext = EXTENSIONS.find((e) => file.endsWith(e));
    const name = ext ? file.slice(0, -ext.length) : file;
    try {
      if (!(await stat(path)).isFile()) continue;
      const bad = badClusterName(name);
      if (bad) throw new FleetError('InvalidCluster', `${path}: ${bad}`);
      if (clusters.has(name))
        throw new FleetError('InvalidCluster', `${path}: a second file for cluster ${name}: remove one`);
      const text = await readFile(path, 'utf8');
      const config = kubeconfigFromText(text, { source: path, embeddedOnly: false });
      clusters.set(name, { config, fingerprint: fingerprintOf(text) });
    } catch (err) {
      problems.set(name, (err as Error).message);
    }
  }
  return { clusters, problems };
}
