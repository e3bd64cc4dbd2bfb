/**
 * @module preflight
 * What `opkit deploy` (plain and `--helm`) checks before its first write, and how it writes so that a failure says
 * what it left behind.
 *
 * `preflight` reads only: every object's kind must be served by the cluster (discovery of its group version) or be
 * defined by a CustomResourceDefinition among the objects (a served version of it), and every namespace a namespaced
 * object goes into must exist or be created — by a Namespace among the objects, or by the caller (helm's
 * `--create-namespace`). A miss is a `CliError` (`NotServed`) whose message starts with "nothing was applied" and
 * names each missing kind with the files its objects come from and what to install (for cert-manager's kinds: cert-manager,
 * or the caller's way to deploy without it), and each missing namespace with the objects that need it.
 *
 * `applyReporting` applies objects one by one, in order; when a write fails it throws a `CliError`
 * (`PartiallyApplied`, or `ClusterFailed` when nothing had been applied) naming the object that failed and why,
 * every object applied before it (they stay in the cluster) and what was not applied.
 */
import { isApiError, type KubeObject } from '@opkit/runtime';
import type { APIResource, Applier, Client } from '@opkit/runtime/client';
import { Namespaces } from '@opkit/runtime/kinds';
import yaml from 'js-yaml';
import { CliError } from './errors.ts';

/** An object and the file it comes from (relative to the project). */
export interface Sourced {
  readonly object: KubeObject;
  readonly source: string;
}

/** What the check reads from the cluster. */
export interface ClusterView {
  /** The resources served in `apiVersion`; empty when the group version is not served. */
  resources(apiVersion: string): Promise<readonly APIResource[]>;
  namespaceExists(name: string): Promise<boolean>;
}

export interface MissingKind {
  readonly apiVersion: string;
  readonly kind: string;
  readonly sources: readonly string[];
}

export interface MissingNamespace {
  readonly name: string;
  /** `Kind name` of each object that goes into it. */
  readonly objects: readonly string[];
}

export interface Problems {
  readonly kinds: readonly MissingKind[];
  readonly namespaces: readonly MissingNamespace[];
}

export interface PreflightOptions {
  /** Where a namespaced object without `metadata.namespace` goes. */
  readonly defaultNamespace: string;
  /** Namespaces the deploy creates besides the Namespace objects (helm's `--create-namespace`). */
  readonly createdNamespaces?: readonly string[];
}

/** A cluster view over the client: discovery (NotFound = not served) and namespace reads, each asked once. */
export function clusterView(client: Client): ClusterView {
  const discovered = new Map<string, Promise<readonly APIResource[]>>();
  return {
    resources(apiVersion) {
      let found = discovered.get(apiVersion);
      if (!found) {
        found = client.serverResources(apiVersion).catch((err: unknown) => {
          if (isApiError(err, 'NotFound')) return [];
          throw err;
        });
        discovered.set(apiVersion, found);
      }
      return found;
    },
    async namespaceExists(name) {
      try {
        await client.get(Namespaces, { name });
        return true;
      } catch (err) {
        if (isApiError(err, 'NotFound')) return false;
        throw err;
      }
    },
  };
}

interface CrdShape {
  spec?: {
    group?: string;
    scope?: string;
    names?: { kind?: string };
    versions?: { name?: string; served?: boolean }[];
  };
}

/** `apiVersion kind` → namespaced, for each kind the CRDs among `objects` define (served versions only). */
function definedKinds(objects: readonly KubeObject[]): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition') continue;
    const spec = (o as CrdShape).spec;
    if (!spec?.group || !spec.names?.kind) continue;
    for (const v of spec.versions ?? []) {
      if (v.name && v.served !== false) out.set(`${spec.group}/${v.name} ${spec.names.kind}`, spec.scope !== 'Cluster');
    }
  }
  return out;
}

const describe = (o: KubeObject) =>
  `${o.kind} ${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/** What the cluster lacks for `items` (see the module's guarantees). Reads only. */
export async function findProblems(
  items: readonly Sourced[],
  cluster: ClusterView,
  options: PreflightOptions,
): Promise<Problems> {
  const defined = definedKinds(items.map((i) => i.object));
  const kinds = new Map<string, { apiVersion: string; kind: string; sources: Set<string> }>();
  const created = new Set(options.createdNamespaces ?? []);
  for (const { object } of items) {
    if (object.apiVersion === 'v1' && object.kind === 'Namespace' && object.metadata.name) {
      created.add(object.metadata.name);
    }
  }
  const needed = new Map<string, string[]>();
  for (const { object, source } of items) {
    const apiVersion = object.apiVersion ?? '';
    const kind = object.kind ?? '';
    let namespaced = defined.get(`${apiVersion} ${kind}`);
    if (namespaced === undefined) {
      namespaced = (await cluster.resources(apiVersion)).find((r) => r.kind === kind)?.namespaced;
    }
    if (namespaced === undefined) {
      const key = `${apiVersion} ${kind}`;
      const entry = kinds.get(key) ?? { apiVersion, kind, sources: new Set<string>() };
      entry.sources.add(source);
      kinds.set(key, entry);
      continue;
    }
    if (!namespaced) continue;
    const namespace = object.metadata.namespace ?? options.defaultNamespace;
    if (created.has(namespace)) continue;
    needed.set(namespace, [...(needed.get(namespace) ?? []), describe(object)]);
  }
  const namespaces: MissingNamespace[] = [];
  for (const [name, objects] of needed) {
    if (!(await cluster.namespaceExists(name))) namespaces.push({ name, objects });
  }
  return {
    kinds: [...kinds.values()].map((k) => ({ apiVersion: k.apiVersion, kind: k.kind, sources: [...k.sources] })),
    namespaces,
  };
}

/** How to get a group version served: `withoutCertManager` is the caller's way to deploy without cert-manager. */
export function installAdvice(apiVersion: string, withoutCertManager: string): string {
  const group = apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '';
  if (group === 'cert-manager.io' || group.endsWith('.cert-manager.io')) {
    return (
      'install cert-manager in the cluster first (https://cert-manager.io/docs/installation/) and run again, ' +
      `or deploy without it: ${withoutCertManager}`
    );
  }
  return `install what serves ${apiVersion} (its CustomResourceDefinitions, or the API server that serves it) first`;
}

/** The one-line message for `problems` (which must not be empty). */
export function problemsMessage(problems: Problems, server: string, withoutCertManager: string): string {
  const parts: string[] = [];
  const byAdvice = new Map<string, MissingKind[]>();
  for (const k of problems.kinds) {
    const advice = installAdvice(k.apiVersion, withoutCertManager);
    byAdvice.set(advice, [...(byAdvice.get(advice) ?? []), k]);
  }
  for (const [advice, kinds] of byAdvice) {
    const list = kinds.map((k) => `kind ${k.kind} in ${k.apiVersion} (${k.sources.join(', ')})`).join(', ');
    parts.push(`the cluster does not serve ${list}: ${advice}`);
  }
  for (const n of problems.namespaces) {
    parts.push(
      `namespace ${n.name} does not exist and nothing deployed creates it (needed by ${n.objects.join(', ')}): ` +
        `create it (kubectl create namespace ${n.name}) or change where those objects go`,
    );
  }
  return `nothing was applied to ${server}: ${parts.join('; ')}`;
}

/** Throws a `NotServed` CliError when the cluster lacks a kind or a namespace `items` need; reads only. */
export async function preflight(
  cluster: ClusterView,
  items: readonly Sourced[],
  options: PreflightOptions & { readonly server: string; readonly withoutCertManager: string },
): Promise<void> {
  let problems: Problems;
  try {
    problems = await findProblems(items, cluster, options);
  } catch (err) {
    throw new CliError(
      'ClusterFailed',
      `nothing was applied to ${options.server}: checking the cluster before the first write failed: ${(err as Error).message.split('\n')[0]}`,
      { cause: err },
    );
  }
  if (problems.kinds.length > 0 || problems.namespaces.length > 0) {
    throw new CliError('NotServed', problemsMessage(problems, options.server, options.withoutCertManager));
  }
}

/**
 * Applies `objects` in order, calling `onApplied` after each; a failed write throws a CliError naming it, what was
 * applied before it (`before`: what the caller had already applied, then these) and what was not.
 */
export async function applyReporting(
  applier: Applier,
  objects: readonly KubeObject[],
  onApplied: (obj: KubeObject) => void,
  before: readonly string[] = [],
): Promise<string[]> {
  const applied = [...before];
  for (const [i, obj] of objects.entries()) {
    try {
      await applier.applyAll([obj]);
    } catch (err) {
      const rest = objects.slice(i + 1).map(describe);
      const why = (err as Error).message.split('\n')[0];
      const notApplied =
        rest.length > 0 ? `; not applied: it and the ${rest.length} after it (${rest.join(', ')})` : '';
      throw new CliError(
        applied.length > 0 ? 'PartiallyApplied' : 'ClusterFailed',
        `applying ${describe(obj)} failed: ${why}; ` +
          (applied.length > 0
            ? `applied before it, and still in the cluster: ${applied.join(', ')}`
            : 'nothing was applied before it') +
          `${notApplied} — fix the cause and run the same command again (it applies the same objects), or remove ` +
          'what was applied with opkit undeploy',
        { cause: err },
      );
    }
    applied.push(describe(obj));
    onApplied(obj);
  }
  return applied;
}

/**
 * `Kind/name` → the file each generated object is in (config/…), from `opkit generate`'s files; kustomizations and
 * dist/ are passed over.
 */
export function configSources(files: ReadonlyMap<string, string>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [path, text] of files) {
    if (path.startsWith('dist/') || path.endsWith('kustomization.yaml') || !path.endsWith('.yaml')) continue;
    for (const doc of yaml.loadAll(text)) {
      const o = doc as Partial<KubeObject> | null;
      if (!o || typeof o !== 'object' || !o.kind || !o.metadata?.name) continue;
      const key = `${o.kind}/${o.metadata.name}`;
      if (!out.has(key)) out.set(key, path);
    }
  }
  return out;
}

export const sourceKey = (o: KubeObject) => `${o.kind}/${o.metadata.name}`;

/**
 * The objects of `helm template` output, each with its template's path in the project (`dist/chart/…` for
 * `# Source: <chart>/…`).
 */
export function renderedObjects(text: string, chartDir: string): Sourced[] {
  const out: Sourced[] = [];
  for (const chunk of text.split(/^---\s*$/m)) {
    const source = /^# Source: [^/\n]+\/(.+)$/m.exec(chunk)?.[1];
    const doc = yaml.load(chunk) as Partial<KubeObject> | null | undefined;
    if (!doc || typeof doc !== 'object' || !doc.kind || !doc.metadata?.name) continue;
    out.push({ object: doc as KubeObject, source: source ? `${chartDir}/${source}` : chartDir });
  }
  return out;
}
