/**
 * @module client/resource
 * What the client needs to know about a kind: group, version, kind, plural and scope — a `Kind<T>`, which also
 * carries the TypeScript type `T` of its objects. Objects are plain parsed JSON typed by interfaces (never model class
 * instances): the built-in kinds' interfaces are generated in their JSON form (./kinds/), and `Wire<T>` turns a model
 * type that says `Date` for timestamps (as @kubernetes/client-node's do) into what the API really sends (RFC 3339
 * strings). Every object has `metadata`.
 */

import { UsageError } from '../errors.ts';
import type { ObjectMeta } from './kinds/meta.ts';
import { hasDecoder, PROTOBUF } from './protobuf/codec.ts';

export type { ObjectMeta, OwnerReference } from './kinds/meta.ts';

/** The JSON form of a model type whose timestamps are `Date`s (as @kubernetes/client-node's): timestamps are strings. */
export type Wire<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? Wire<U>[]
    : T extends object
      ? { [K in keyof T]: Wire<T[K]> }
      : T;

/** Any Kubernetes object as the API returns it. */
export interface KubeObject {
  /** `v1` or `<group>/<version>`; the client fills it in on objects it returns. */
  apiVersion?: string;
  /** The kind, e.g. `Pod`; the client fills it in on objects it returns. */
  kind?: string;
  /** Name, namespace, labels, annotations, owners, finalizers, resourceVersion, … */
  metadata: ObjectMeta;
}

/** A model type as an API object: its JSON form with required metadata. */
export type ApiObject<T> = Omit<Wire<T>, 'metadata'> & { metadata: ObjectMeta };

/**
 * A kind as the client sees it. `T` is the type of its objects as the API returns them; `I` what a create or apply
 * accepts (for a custom kind, fields the apiserver defaults are optional; for others the same as `T`).
 */
export interface Kind<T extends KubeObject = KubeObject, I = unknown> {
  /** API group, '' for the core group. */
  readonly group: string;
  /** API version within the group, e.g. `v1`. */
  readonly version: string;
  /** The kind of its objects, e.g. `Deployment`. */
  readonly kind: string;
  /** Lower-case plural used in paths, e.g. `pods`. */
  readonly plural: string;
  /** Whether its objects live in a namespace. */
  readonly namespaced: boolean;
  /** `v1` or `<group>/<version>`. */
  readonly apiVersion: string;
  /** Phantom: the object type (never set at run time); name it with `ObjectOf<typeof Kind>`. */
  readonly _type?: T;
  /**
   * Phantom: the input type (never set at run time); name it with `InputOf<typeof Kind>`. `unknown` (the default)
   * means the same as `T`, so every `Kind<T, I>` passes where a `Kind<T>` is asked for.
   */
  readonly _input?: I;
  /**
   * Reads and watches of this type ask the apiserver for metadata only (`PartialObjectMetadata`): see `metadataOnly`.
   */
  readonly metadataOnly?: boolean;
}

/** The type of a kind's objects as the API returns them: `ObjectOf<typeof AppServices>`, `ObjectOf<typeof Pods>`. */
export type ObjectOf<R> = R extends Kind<infer T, unknown> ? T : never;

/** What creating an object of a kind takes: `ObjectOf` with the fields the apiserver defaults left optional. */
export type InputOf<R> = R extends Kind<infer T, infer I> ? (unknown extends I ? T : I) : never;

/** What `resource()` needs to describe a kind. */
export interface ResourceDefinition {
  /** API group, '' for the core group. */
  readonly group: string;
  /** API version within the group, e.g. `v1`. */
  readonly version: string;
  /** The kind of its objects, e.g. `Deployment`. */
  readonly kind: string;
  /** Lower-case plural used in paths, e.g. `deployments`. */
  readonly plural: string;
  /** Whether its objects live in a namespace. */
  readonly namespaced: boolean;
}

/** Describes a kind, e.g. a custom resource: `resource<AppService>({ group: 'app.example.com', … })`. */
export function resource<T extends KubeObject, I = unknown>(def: ResourceDefinition): Kind<T, I> {
  return Object.freeze({ ...def, apiVersion: def.group === '' ? def.version : `${def.group}/${def.version}` });
}

/** An object's metadata alone, as the apiserver answers a metadata-only read (`meta.k8s.io/v1` `PartialObjectMetadata`). */
export interface PartialObjectMetadata extends KubeObject {
  metadata: ObjectMeta;
}

/**
 * The metadata-only form of a kind, as controller-runtime's metadata informers: `get`, `list`, `watch`, `patch` and
 * `delete` ask the apiserver for `PartialObjectMetadata` (names, labels, annotations, owners, finalizers,
 * resourceVersion: no spec, no status, no data), so a cache of it neither transfers, parses nor keeps the rest. A
 * `Cache` keeps its informer apart from the full kind's. Writes that send a whole object (create, update, apply,
 * status) are refused with a `UsageError` (`InvalidArgument`) before any request: they would write an object without its spec. RBAC is
 * the kind's own (`list`/`watch` on pods for `metadataOnly(Pods)`).
 */
export function metadataOnly(r: Kind): Kind<PartialObjectMetadata> {
  const { group, version, kind, plural, namespaced, apiVersion } = r;
  return Object.freeze({ group, version, kind, plural, namespaced, apiVersion, metadataOnly: true });
}

/**
 * The Accept header of a read of `r`: for a metadata-only type the object (or list) as its metadata; with `protobuf`,
 * for a built-in kind the client has a decoder for, the protobuf encoding first and JSON after it (an apiserver, or an
 * aggregated one, that does not serve protobuf for it answers JSON); else JSON.
 */
export function acceptOf(r: Kind, list = false, protobuf = false): string {
  if (r.metadataOnly) return `application/json;as=PartialObjectMetadata${list ? 'List' : ''};g=meta.k8s.io;v=v1`;
  return protobuf && hasDecoder(r.apiVersion, r.kind) ? PROTOBUF_OR_JSON : 'application/json';
}

/** Protobuf where the apiserver has it, JSON where it does not. */
const PROTOBUF_OR_JSON = `${PROTOBUF}, application/json`;

/** A unique, human-readable name of the resource: `pods`, `deployments.apps`, `appservices.app.example.com`. */
export function resourceId(r: Kind): string {
  return r.group === '' ? r.plural : `${r.plural}.${r.group}`;
}

/** The collection path: `/api/v1/namespaces/ns/pods` or `/apis/apps/v1/deployments` (all namespaces). */
export function collectionPath(r: Kind, namespace?: string): string {
  const base = r.group === '' ? `/api/${r.version}` : `/apis/${r.group}/${r.version}`;
  return r.namespaced && namespace
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.plural}`
    : `${base}/${r.plural}`;
}

/**
 * The object path (`/api/v1/namespaces/ns/pods/web`), with `/subresource` when given.
 *
 * @throws UsageError (`InvalidArgument`) when `r` is namespaced and `ref` names no namespace.
 */
export function objectPath(r: Kind, ref: ObjectRef, subresource?: string): string {
  if (r.namespaced && !ref.namespace) {
    throw new UsageError(
      'InvalidArgument',
      `${r.kind} is namespaced: the reference to "${ref.name}" needs a namespace`,
    );
  }
  const path = `${collectionPath(r, ref.namespace)}/${encodeURIComponent(ref.name)}`;
  return subresource ? `${path}/${subresource}` : path;
}

/** Names an object: `namespace` for namespaced kinds, none for cluster-scoped ones. */
export interface ObjectRef {
  /** The namespace; leave it out for a cluster-scoped object. */
  readonly namespace?: string;
  /** The object's name. */
  readonly name: string;
}

/** `namespace/name`, or `name` for cluster-scoped objects: the key of caches and work queues. */
export function objectKey(ref: { readonly namespace?: string | undefined; readonly name: string }): string {
  return ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name;
}

/** The object's key, `namespace/name` (or `name` when cluster-scoped): what caches and work queues file it under. */
export function keyOf(obj: KubeObject): string {
  return objectKey({ namespace: obj.metadata.namespace, name: obj.metadata.name ?? '' });
}

/**
 * The object's namespace and name, as an `ObjectRef` for a read or write of the same object (no namespace for a
 * cluster-scoped one).
 *
 * @example
 * ```ts
 * import { type Client, refOf } from '@opkit/runtime/client';
 * import { type Deployment, Deployments } from '@opkit/runtime/kinds';
 *
 * declare const client: Client;
 * declare const cached: Deployment;
 * // Read the object a cache handed out again, fresh from the apiserver, and its scale.
 * const fresh = await client.get(Deployments, refOf(cached));
 * const scale = await client.getScale(Deployments, refOf(fresh));
 * ```
 */
export function refOf(obj: KubeObject): ObjectRef {
  const name = obj.metadata.name ?? '';
  return obj.metadata.namespace ? { namespace: obj.metadata.namespace, name } : { name };
}

/** The `ObjectRef` of a key `namespace/name` (or `name`): the inverse of `keyOf`. */
export function parseKey(key: string): ObjectRef {
  const slash = key.indexOf('/');
  return slash < 0 ? { name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
