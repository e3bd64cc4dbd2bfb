/**
 * @module tools/kinds/select
 * Which kinds are generated, and their resources: the stable group versions opkit types, and for each the kinds read
 * from the document's paths — a kind whose collection path (`…/<plural>` or `…/namespaces/{namespace}/<plural>`) has a
 * `list` operation (a controller may own or watch it), the create-only kinds of the review groups (TokenReview,
 * SubjectAccessReview, …), and the subresource kinds a client sends (Scale, Eviction, TokenRequest).
 *
 * Guarantees: plural and scope are the apiserver's own (from the path, never guessed from the kind); the order is the
 * group order of `GROUP_VERSIONS`, then the kind's name, so the output is stable.
 */
import {
  discoveryPath,
  type GroupVersionKind,
  KindsGenError,
  type OpenApiDocuments,
  type Operation,
} from './openapi.ts';

/** A group version to generate, and the file (one per group) its types go to. */
export interface GroupVersion {
  readonly group: string;
  readonly version: string;
  /** The generated file's base name, e.g. `core`, `networking`. */
  readonly file: string;
  /** Whether its create-only kinds are generated too (the review APIs). */
  readonly createOnly?: boolean;
}

/**
 * The group versions opkit generates, in precedence order: when two definitions share a name, the one from the group
 * version listed first keeps it and the other is prefixed with its group and version (`EventsV1Event`).
 */
export const GROUP_VERSIONS: readonly GroupVersion[] = [
  { group: '', version: 'v1', file: 'core' },
  { group: 'apps', version: 'v1', file: 'apps' },
  { group: 'batch', version: 'v1', file: 'batch' },
  { group: 'networking.k8s.io', version: 'v1', file: 'networking' },
  { group: 'policy', version: 'v1', file: 'policy' },
  { group: 'rbac.authorization.k8s.io', version: 'v1', file: 'rbac' },
  { group: 'storage.k8s.io', version: 'v1', file: 'storage' },
  { group: 'coordination.k8s.io', version: 'v1', file: 'coordination' },
  { group: 'discovery.k8s.io', version: 'v1', file: 'discovery' },
  { group: 'autoscaling', version: 'v2', file: 'autoscaling' },
  { group: 'autoscaling', version: 'v1', file: 'autoscaling' },
  { group: 'admissionregistration.k8s.io', version: 'v1', file: 'admissionregistration' },
  { group: 'certificates.k8s.io', version: 'v1', file: 'certificates' },
  { group: 'scheduling.k8s.io', version: 'v1', file: 'scheduling' },
  { group: 'node.k8s.io', version: 'v1', file: 'node' },
  { group: 'apiextensions.k8s.io', version: 'v1', file: 'apiextensions' },
  { group: 'authentication.k8s.io', version: 'v1', file: 'authentication', createOnly: true },
  { group: 'authorization.k8s.io', version: 'v1', file: 'authorization', createOnly: true },
  { group: 'events.k8s.io', version: 'v1', file: 'events' },
];

/** Subresource kinds a client sends or receives as a body, generated as types without a resource. */
const SUBRESOURCE_KINDS = new Set([
  'autoscaling/v1/Scale',
  'policy/v1/Eviction',
  'authentication.k8s.io/v1/TokenRequest',
]);

/** A generated kind: its group version, its schema's definition id and, unless a subresource kind, its resource. */
export interface SelectedKind {
  readonly gv: GroupVersion;
  readonly gvk: GroupVersionKind;
  /** The `components.schemas` key of its schema, e.g. `io.k8s.api.core.v1.Pod`. */
  readonly definition: string;
  /** Its resource; undefined for a subresource kind (Scale). */
  readonly resource?: { readonly plural: string; readonly namespaced: boolean };
}

/** The collection a path names under its group version's prefix: `pods`, or `pods` in a namespace; else undefined. */
function collectionOf(path: string, prefix: string): { plural: string; namespaced: boolean } | undefined {
  if (!path.startsWith(`${prefix}/`)) return undefined;
  const segments = path.slice(prefix.length + 1).split('/');
  if (segments.length === 1 && segments[0] && !segments[0].includes('{'))
    return { plural: segments[0], namespaced: false };
  if (segments.length === 3 && segments[0] === 'namespaces' && segments[1] === '{namespace}' && segments[2])
    return { plural: segments[2], namespaced: true };
  return undefined;
}

/**
 * The definition id whose `x-kubernetes-group-version-kind` names `gvk`, in any document: a subresource kind's schema
 * is in the document of the resource that serves it (policy/v1 Eviction in `api/v1`, for pods/eviction).
 */
function definitionOf(docs: OpenApiDocuments, gvk: GroupVersionKind): string {
  for (const doc of docs.values()) {
    for (const [id, schema] of Object.entries(doc.components?.schemas ?? {})) {
      const named = schema['x-kubernetes-group-version-kind'] ?? [];
      if (named.some((g) => g.group === gvk.group && g.version === gvk.version && g.kind === gvk.kind)) return id;
    }
  }
  throw new KindsGenError(`no document has a schema for ${gvk.group}/${gvk.version} ${gvk.kind}`);
}

/** Every kind of `GROUP_VERSIONS` found in `docs` (documents keyed by discovery path). */
export function selectKinds(docs: OpenApiDocuments, gvs: readonly GroupVersion[] = GROUP_VERSIONS): SelectedKind[] {
  const out: SelectedKind[] = [];
  for (const gv of gvs) {
    const path = discoveryPath(gv.group, gv.version);
    const doc = docs.get(path);
    if (!doc) throw new KindsGenError(`no OpenAPI document for ${path}`);
    const found = new Map<string, SelectedKind>();
    for (const [p, item] of Object.entries(doc.paths ?? {})) {
      const where = collectionOf(p, `/${path}`);
      if (!where) continue;
      for (const op of Object.values(item) as Operation[]) {
        const gvk = op?.['x-kubernetes-group-version-kind'];
        const action = op?.['x-kubernetes-action'];
        if (!gvk || gvk.group !== gv.group || gvk.version !== gv.version) continue;
        if (action !== 'list' && !(gv.createOnly && action === 'post')) continue;
        // A namespaced kind is listed twice: in a namespace, and across all of them at `…/<plural>`.
        const namespaced = where.namespaced || (found.get(gvk.kind)?.resource?.namespaced ?? false);
        const resource = { plural: where.plural, namespaced };
        found.set(gvk.kind, { gv, gvk, definition: definitionOf(docs, gvk), resource });
      }
    }
    for (const id of SUBRESOURCE_KINDS) {
      const [group, version, kind] = id.split('/') as [string, string, string];
      if (group !== (gv.group === '' ? 'core' : gv.group) || version !== gv.version) continue;
      const gvk = { group: gv.group, version, kind };
      found.set(kind, { gv, gvk, definition: definitionOf(docs, gvk) });
    }
    out.push(...[...found.values()].sort((a, b) => (a.gvk.kind < b.gvk.kind ? -1 : 1)));
  }
  return out;
}
