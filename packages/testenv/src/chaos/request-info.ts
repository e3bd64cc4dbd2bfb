/**
 * @module chaos/request-info
 * What a request to the kube-apiserver is, from its method and URL alone, as the apiserver's own request-info
 * resolver tells it: the verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`), the
 * API group and version, the resource and subresource, the namespace and the object's name.
 *
 * Guarantees: a path that is not a resource request (`/healthz`, `/version`, discovery such as `/apis/apps/v1`) has
 * no resource, and its verb is the method's lower case; a list with `watch=true` (or `watch=1`) is a `watch`; a list's
 * `limit`, when a positive integer, is its page size.
 */

/** A request to the apiserver, by what it does. */
export interface RequestInfo {
  /** The Kubernetes verb, or the lower-case HTTP method when the path is not a resource request. */
  readonly verb: string;
  /** `""` for the core group. */
  readonly group?: string;
  /** The API version. */
  readonly version?: string;
  /** The resource (plural), if the path is a resource request. */
  readonly resource?: string;
  /** `status`, `scale`, … */
  readonly subresource?: string;
  /** The namespace; none for a cluster-scoped object or a request across namespaces. */
  readonly namespace?: string;
  /** The object's name; none for a list, a watch or a create. */
  readonly name?: string;
  /** A list's page size (`limit`), when it asks for one. */
  readonly limit?: number;
}

/** A Namespace's own subresources: `namespaces/<name>/finalize` is not a resource `finalize` in that namespace. */
const NAMESPACE_SUBRESOURCES: ReadonlySet<string> = new Set(['status', 'finalize']);

/** Whether `verb` changes what is stored. */
export const isWrite = (verb: string): boolean =>
  verb === 'create' || verb === 'update' || verb === 'patch' || verb === 'delete' || verb === 'deletecollection';

/** `method` and `url` (a path with its query) as the apiserver reads them. */
export function requestInfo(method: string, url: string): RequestInfo {
  const [path = '', query = ''] = url.split('?', 2);
  const parts = path
    .split('/')
    .filter((p) => p.length > 0)
    .map((p) => decodeURIComponent(p));
  const m = method.toUpperCase();
  const plain: RequestInfo = { verb: m.toLowerCase() };
  let rest: string[];
  let group: string;
  let version: string | undefined;
  if (parts[0] === 'api') {
    group = '';
    version = parts[1];
    rest = parts.slice(2);
  } else if (parts[0] === 'apis') {
    group = parts[1] ?? '';
    version = parts[2];
    rest = parts.slice(3);
  } else return plain;
  if (version === undefined || rest.length === 0) return plain;
  let namespace: string | undefined;
  // `namespaces/<ns>/<resource>…` is namespaced; `namespaces`, `namespaces/<name>` and a Namespace's own subresources
  // (`status`, `finalize`) are the Namespace kind
  if (rest[0] === 'namespaces' && rest.length >= 2) {
    namespace = rest[1];
    if (rest.length >= 3 && !NAMESPACE_SUBRESOURCES.has(rest[2] as string)) rest = rest.slice(2);
  }
  const [resource, name, subresource] = rest;
  if (resource === undefined) return plain;
  const watch = /(^|&)watch=(true|1)(&|$)/.test(query);
  const verb =
    m === 'GET' || m === 'HEAD'
      ? watch
        ? 'watch'
        : name === undefined
          ? 'list'
          : 'get'
      : m === 'POST'
        ? 'create'
        : m === 'PUT'
          ? 'update'
          : m === 'PATCH'
            ? 'patch'
            : m === 'DELETE'
              ? name === undefined
                ? 'deletecollection'
                : 'delete'
              : m.toLowerCase();
  const limit = verb === 'list' ? Number(new URLSearchParams(query).get('limit') ?? '') : 0;
  return {
    verb,
    group,
    version,
    resource,
    ...(subresource !== undefined ? { subresource } : {}),
    ...(namespace !== undefined ? { namespace } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(Number.isSafeInteger(limit) && limit > 0 ? { limit } : {}),
  };
}

/** `verb resource[/subresource] [namespace/]name`, for reports: `update appservices/status ns/app-0`. */
export function describeRequest(r: RequestInfo): string {
  if (r.resource === undefined) return r.verb;
  const what = `${r.resource}${r.subresource ? `/${r.subresource}` : ''}`;
  // a Namespace's namespace is itself (as the apiserver reads it): named once
  const ns = r.resource === 'namespaces' ? undefined : r.namespace;
  const where = r.name !== undefined ? ` ${ns ? `${ns}/` : ''}${r.name}` : ns ? ` in ${ns}` : '';
  return `${r.verb} ${what}${where}`;
}
