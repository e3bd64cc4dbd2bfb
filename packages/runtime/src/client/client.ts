/**
 * @module client/client
 * The typed client: get / list / create / update / patch / apply / delete for any `Kind` (built-in or custom,
 * namespaced or cluster-scoped), the `status` and `scale` subresources, and paginated lists (client/pager.ts); the
 * options and answers of its calls are client/types.ts.
 *
 * Guarantees: every list is paginated (`limit`/`continue`, 500 per page by default) and all pages come from one
 * consistent snapshot; if the continue token expires mid-way (410), the rest comes from one unpaginated list, as
 * client-go's pager does — the caller is told to drop the pages it had (`ObjectList.restart`). Status changes go
 * through the status subresource (`updateStatus` / `patchStatus`): `update` of an object whose kind has a status
 * subresource ignores status, as the apiserver does. A metadata-only type (`metadataOnly(kind)`) reads, watches,
 * patches and deletes `PartialObjectMetadata`; its whole-object writes throw a `UsageError` (`InvalidArgument`) before
 * any request, as does a write of an object without a name, or a server-side apply without a field manager.
 * Gets, lists and watches of built-in kinds ask for protobuf, with JSON as the apiserver's fallback (`protobuf: false`
 * asks for JSON only), and so do their writes for their answers (client/writes.ts: never sent twice); the objects
 * are the same either way (client/protobuf/codec.ts). Custom resources and request bodies are JSON.
 * Errors are `ApiError`s. A client made by `withSignal(signal)` shares the connection and aborts every request it
 * makes when `signal` does (a reconcile's client: a stopping controller cuts its hung requests short without each
 * call passing the signal); one made by `withGuard(guard)` asks `guard` right before each attempt goes out, and
 * sends nothing when it throws (`Aborted`): a fence checked at the last moment, not by a timer that may run late.
 */

import { UsageError } from '../errors.ts';
import { defined } from '../internal/defined.ts';
import { allGuards } from '../internal/guards.ts';
import { VERSION } from '../version.ts';
import { ApiError } from './errors.ts';
import { type ConnectionConfig, type LoadOptions, loadConfig } from './kubeconfig.ts';
import { pages } from './pager.ts';
import { type FieldMask, hasDecoder, load, MASK, type Masked } from './protobuf/codec.ts';
import {
  acceptOf,
  collectionPath,
  type InputOf,
  type Kind,
  type KubeObject,
  type ObjectOf,
  type ObjectRef,
  objectPath,
} from './resource.ts';
import { Transport, type TransportRequest } from './transport.ts';
import type {
  APIResource,
  ApplyOptions,
  ClientOptions,
  DeleteOptions,
  ListOptions,
  ObjectList,
  PatchOptions,
  ScaleObject,
  WriteOptions,
} from './types.ts';
import { checkWatchRequest, type WatchEvent, type WatchRequest, watchEvents } from './watch.ts';
import { answerOf, CONTENT_TYPES, deleteBody, wholeObject, withType, writeQuery, writtenRef } from './writes.ts';

/**
 * The typed Kubernetes client: reads and writes of any `Kind`, subresources, paginated lists and watches, all
 * failing with `ApiError`. See the module comment for its guarantees.
 *
 * @showModuleComment
 */
export class Client {
  /** The HTTP connection the client sends its requests through (shared by clients made with `withSignal`). */
  readonly transport: Transport;
  /** The namespace of the kubeconfig context (or the pod's, in a cluster). */
  readonly defaultNamespace: string;
  /** Aborts every request of this client (see `withSignal`). */
  readonly #bound: AbortSignal | undefined;
  /** Asked before each request of this client goes out (see `withGuard`). */
  readonly #guard: (() => void) | undefined;
  /** Whether reads of built-in kinds ask for protobuf. */
  readonly #protobuf: boolean;

  constructor(
    config: ConnectionConfig | Client,
    options: Omit<ClientOptions, 'config'> & { bound?: AbortSignal; guard?: () => void } = {},
  ) {
    if (config instanceof Client) {
      this.transport = config.transport;
      this.defaultNamespace = config.defaultNamespace;
      const outer = config.#bound;
      this.#bound = outer && options.bound ? AbortSignal.any([outer, options.bound]) : (options.bound ?? outer);
      this.#guard = allGuards(config.#guard, options.guard);
      this.#protobuf = config.#protobuf;
      return;
    }
    const { qps, burst, timeoutMs, metrics, fieldValidation, onWarning } = options;
    this.transport = new Transport({
      config,
      userAgent: `opkit/${VERSION}${options.name ? ` (${options.name})` : ''}`,
      ...defined({ qps, burst, timeoutMs, metrics, fieldValidation, onWarning }),
    });
    this.defaultNamespace = config.namespace;
    this.#bound = options.bound;
    this.#guard = options.guard;
    this.#protobuf = options.protobuf ?? true;
  }

  /**
   * A client on the same connection whose every request also aborts when `signal` does (with `Aborted`). Closing it
   * closes the shared connection: close only the client you created.
   */
  withSignal(signal: AbortSignal): Client {
    return new Client(this, { bound: signal });
  }

  /**
   * A client on the same connection that calls `guard` right before each of its requests (each retry too) is sent:
   * when it throws, nothing is sent and the request fails with `Aborted` (`cause`: what it threw). Guards add up
   * through `withGuard` and `withSignal`. A replica that may act only while it holds a Lease checks it here.
   */
  withGuard(guard: () => void): Client {
    return new Client(this, { guard });
  }

  /** A client for the kubeconfig kubectl would use (or the given file/context), or the in-cluster config. */
  static async create(options: ClientOptions & LoadOptions = {}): Promise<Client> {
    const config = options.config ?? (await loadConfig(options));
    return new Client(config, options);
  }

  /** The object, read from the apiserver; throws `ApiError` `NotFound` when there is none. */
  get<T extends KubeObject>(r: Kind<T>, ref: ObjectRef, options: { signal?: AbortSignal } = {}): Promise<T> {
    return this.#read(r, () =>
      this.transport.request<T>({
        method: 'GET',
        path: objectPath(r, ref),
        accept: acceptOf(r, false, this.#protobuf),
        ...this.#signal(options),
      }),
    );
  }

  /** As `get`, but a missing object (NotFound) answers `undefined` instead of throwing. */
  async getIfExists<T extends KubeObject>(
    r: Kind<T>,
    ref: ObjectRef,
    options: { signal?: AbortSignal } = {},
  ): Promise<T | undefined> {
    try {
      return await this.get(r, ref, options);
    } catch (err) {
      if (err instanceof ApiError && err.code === 'NotFound') return undefined;
      throw err;
    }
  }

  /** All items, fetched page by page (see `listPages`). */
  async list<T extends KubeObject>(r: Kind<T>, options: ListOptions = {}): Promise<ObjectList<T>> {
    const items: T[] = [];
    let resourceVersion = '';
    for await (const page of this.listPages(r, options)) {
      if (page.restart) items.length = 0;
      for (const item of page.items) items.push(item);
      resourceVersion = page.metadata.resourceVersion;
    }
    return { items, metadata: { resourceVersion } };
  }

  /**
   * Pages of at most `pageSize` items from one snapshot; `kind` and `apiVersion` are filled in on every item (the
   * apiserver omits them in lists). When the continue token expires (410) mid-way, the next page is the whole list,
   * fetched unpaginated and marked `restart: true`: the caller drops what it had (as client-go's pager falls back).
   */
  listPages<T extends KubeObject>(r: Kind<T>, options: ListOptions = {}): AsyncGenerator<ObjectList<T>> {
    const path = collectionPath(r, options.namespace);
    const items = (options as Masked)[MASK];
    const mask: FieldMask | undefined = items && { rest: true, fields: new Map([['items', items]]) };
    return pages(r, options, (query) =>
      this.#read(r, () =>
        this.transport.request<ObjectList<T>>({
          method: 'GET',
          path,
          accept: acceptOf(r, true, this.#protobuf),
          query,
          mask,
          ...this.#signal(options),
        }),
      ),
    );
  }

  /**
   * The resources the apiserver serves in `apiVersion` (`v1`, `apps/v1`), by discovery; subresources (`pods/status`)
   * are left out. A group version that is not served answers NotFound.
   */
  async serverResources(apiVersion: string, options: { signal?: AbortSignal } = {}): Promise<APIResource[]> {
    const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const list = await this.transport.request<{ resources?: APIResource[] }>({
      method: 'GET',
      path,
      ...this.#signal(options),
    });
    return (list.resources ?? []).filter((r) => !r.name.includes('/'));
  }

  /**
   * The events of one watch from `resourceVersion` (see client/watch.ts): an async stream that ends when the server
   * ends the watch, and throws `Gone` (410), `Inactive`, `Aborted` or `Network`. Informers use it; most code wants a
   * `Cache` instead.
   */
  watch<T extends KubeObject>(r: Kind<T>, req: Omit<WatchRequest, 'bound' | 'guard'>): AsyncGenerator<WatchEvent<T>> {
    checkWatchRequest(req);
    return watchEvents(this.transport, r, {
      ...req,
      protobuf: this.#protobuf,
      mask: (req as Masked)[MASK],
      ...(this.#bound ? { bound: this.#bound } : {}),
      ...(this.#guard ? { guard: this.#guard } : {}),
    });
  }

  /**
   * Creates the object and returns it as stored (defaults filled in); the namespace comes from `metadata.namespace`
   * (or the client's default namespace). Takes the kind's input type (`InputOf`): defaulted fields may be left out.
   */
  create<R extends Kind<KubeObject, unknown>>(r: R, obj: InputOf<R>, options: WriteOptions = {}): Promise<ObjectOf<R>> {
    wholeObject(r, 'create');
    const input = obj as KubeObject;
    const namespace = r.namespaced ? (input.metadata.namespace ?? this.defaultNamespace) : undefined;
    const ref = input.metadata.name ? writtenRef(r, input, namespace ?? '') : undefined;
    return this.#write(r, ref, options, {
      method: 'POST',
      path: collectionPath(r, namespace),
      query: writeQuery(options),
      body: withType(r, input),
    });
  }

  /** Replaces the object (optimistic concurrency: a stale `metadata.resourceVersion` fails with Conflict). */
  update<T extends KubeObject>(r: Kind<T>, obj: T, options: WriteOptions = {}): Promise<T> {
    wholeObject(r, 'update');
    return this.#put(r, obj, options, undefined);
  }

  /** Replaces the status through the status subresource. */
  updateStatus<T extends KubeObject>(r: Kind<T>, obj: T, options: WriteOptions = {}): Promise<T> {
    wholeObject(r, 'updateStatus');
    return this.#put(r, obj, options, 'status');
  }

  /**
   * Patches the object (`options.type`, default a JSON merge patch) and returns it as stored; status is ignored where
   * the kind has a status subresource.
   */
  patch<T extends KubeObject>(r: Kind<T>, ref: ObjectRef, patch: unknown, options: PatchOptions = {}): Promise<T> {
    return this.#patch(r, ref, undefined, patch, options);
  }

  /** Patches the status subresource (`options.type`, default a JSON merge patch) and returns the object as stored. */
  patchStatus<T extends KubeObject>(
    r: Kind<T>,
    ref: ObjectRef,
    patch: unknown,
    options: PatchOptions = {},
  ): Promise<T> {
    return this.#patch(r, ref, 'status', patch, options);
  }

  /** Server-side apply of `obj` (its name and namespace say which object) as `fieldManager`. */
  apply<T extends KubeObject>(r: Kind<T>, obj: T, options: ApplyOptions): Promise<T> {
    return this.#patch(r, this.#ref(r, obj), undefined, withType(r, obj), { ...options, type: 'apply' });
  }

  /** Server-side apply of the status subresource. */
  applyStatus<T extends KubeObject>(r: Kind<T>, obj: T, options: ApplyOptions): Promise<T> {
    return this.#patch(r, this.#ref(r, obj), 'status', withType(r, obj), { ...options, type: 'apply' });
  }

  /**
   * Deletes the object; resolves once the apiserver accepted the delete (finalizers may keep it a while). Throws
   * `ApiError` `NotFound` when there is none.
   */
  async delete<T extends KubeObject>(r: Kind<T>, ref: ObjectRef, options: DeleteOptions = {}): Promise<void> {
    const body = deleteBody(options);
    const path = objectPath(r, ref);
    await this.transport.request<unknown>({
      method: 'DELETE',
      path,
      ...(body ? { body } : {}),
      ...this.#signal(options),
    });
  }

  /**
   * The scale subresource of the object: desired replicas (`spec`), and observed replicas and selector (`status`). A
   * custom kind needs `subresources.scale` in its definition.
   */
  getScale(r: Kind, ref: ObjectRef, options: { signal?: AbortSignal } = {}): Promise<ScaleObject> {
    return this.transport.request<ScaleObject>({
      method: 'GET',
      path: objectPath(r, ref, 'scale'),
      ...this.#signal(options),
    });
  }

  /**
   * Replaces the scale subresource (optimistic concurrency on `metadata.resourceVersion`); see `scale` for setting
   * replicas alone.
   */
  updateScale(r: Kind, ref: ObjectRef, scale: ScaleObject, options: WriteOptions = {}): Promise<ScaleObject> {
    return this.transport.request<ScaleObject>({
      method: 'PUT',
      path: objectPath(r, ref, 'scale'),
      query: writeQuery(options),
      body: { apiVersion: 'autoscaling/v1', kind: 'Scale', ...scale },
      ...this.#signal(options),
    });
  }

  /** Sets `spec.replicas` through the scale subresource (a merge patch). */
  scale(r: Kind, ref: ObjectRef, replicas: number, options: WriteOptions = {}): Promise<ScaleObject> {
    return this.transport.request<ScaleObject>({
      method: 'PATCH',
      path: objectPath(r, ref, 'scale'),
      query: writeQuery(options),
      body: { spec: { replicas } },
      contentType: CONTENT_TYPES.merge,
      ...this.#signal(options),
    });
  }

  /** Closes the connections (requests in flight fail); close only a client you created, not one of `withSignal`. */
  close(): void {
    this.transport.close();
  }

  /**
   * `send`, once the protobuf decoders of `r` (and its list) are loaded when reads of it ask for protobuf: a module per
   * API group version, loaded on its first read.
   */
  #read<V>(r: Kind, send: () => Promise<V>): Promise<V> {
    if (!this.#protobuf || r.metadataOnly || !hasDecoder(r.apiVersion, r.kind)) return send();
    const loading = load(r.apiVersion, r.kind, `${r.kind}List`);
    return loading ? loading.then(send) : send();
  }

  #ref(r: Kind, obj: KubeObject): ObjectRef {
    return writtenRef(r, obj, this.defaultNamespace);
  }

  /** Replaces the object, or its subresource `sub`. */
  #put<T extends KubeObject>(r: Kind<T>, obj: T, options: WriteOptions, sub: string | undefined): Promise<T> {
    const ref = this.#ref(r, obj);
    const path = objectPath(r, ref, sub);
    return this.#write(r, ref, options, { method: 'PUT', path, query: writeQuery(options), body: withType(r, obj) });
  }

  /** A write of the object `ref` (see `answerOf` for how it asks for its answer), with `options`' signal. */
  #write<T>(
    r: Kind,
    ref: ObjectRef | undefined,
    options: WriteOptions,
    req: Omit<TransportRequest, 'accept'>,
  ): Promise<T> {
    // a dry run's answer is not stored anywhere to read back: it asks for JSON
    return answerOf(r, options.dryRun ? undefined : ref, this.#protobuf).then((a) =>
      this.transport.request<T>({ ...req, ...a, ...this.#signal(options) }),
    );
  }

  /** The request's own signal and the client's bound one (the transport follows both). */
  #signal(options: { signal?: AbortSignal | undefined }): Pick<TransportRequest, 'signal' | 'bound' | 'guard'> {
    return {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(this.#bound && this.#bound !== options.signal ? { bound: this.#bound } : {}),
      ...(this.#guard ? { guard: this.#guard } : {}),
    };
  }

  #patch<T extends KubeObject>(
    r: Kind<T>,
    ref: ObjectRef,
    sub: string | undefined,
    patch: unknown,
    options: PatchOptions,
  ): Promise<T> {
    const type = options.type ?? 'merge';
    if (type === 'apply' && !options.fieldManager) {
      throw new UsageError('InvalidArgument', 'server-side apply needs a fieldManager');
    }
    if (type === 'apply' || sub !== undefined)
      wholeObject(r, type === 'apply' ? 'server-side apply' : `a ${sub} patch`);
    return this.#write(r, ref, options, {
      method: 'PATCH',
      path: objectPath(r, ref, sub),
      query: writeQuery(options),
      body: patch,
      contentType: CONTENT_TYPES[type],
    });
  }
}
