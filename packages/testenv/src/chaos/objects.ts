/**
 * @module chaos/objects
 * Objects by `apiVersion` and `kind`, as the chaos runner writes and reads them through the admin's `ApiClient`: the
 * REST path of a kind from the apiserver's discovery (so a CRD installed a moment ago is found once it is served),
 * server-side apply of a whole object as the user (`kubectl apply --server-side` does the same), delete, list.
 *
 * Guarantees: a kind the apiserver does not serve, or a write it refuses, is a `TestenvError` `ChaosInput` naming the
 * object and the apiserver's words; a list of a kind that is not served is empty (a child kind may not be served yet).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient, ApiRequest, ApiResponse } from '../api.ts';
import { TestenvError } from '../errors.ts';

/** An object of any kind, as a manifest or as the apiserver returns it. */
export interface Manifest {
  /** `group/version`, or `v1`. */
  readonly apiVersion: string;
  /** The kind. */
  readonly kind: string;
  /** The metadata the runner reads and places (namespace). */
  readonly metadata: {
    readonly name?: string;
    readonly generateName?: string;
    readonly namespace?: string;
    readonly uid?: string;
    readonly generation?: number;
    readonly labels?: Readonly<Record<string, string>>;
    readonly annotations?: Readonly<Record<string, string>>;
    readonly ownerReferences?: readonly {
      readonly apiVersion: string;
      readonly kind: string;
      readonly name: string;
      readonly uid: string;
      readonly controller?: boolean;
    }[];
    readonly deletionTimestamp?: string;
    readonly finalizers?: readonly string[];
  };
  readonly [field: string]: unknown;
}

/** An object by name: what a scenario deletes. */
export interface ObjectKey {
  /** `group/version`, or `v1`. */
  readonly apiVersion: string;
  /** The kind. */
  readonly kind: string;
  /** The name. */
  readonly name: string;
  /** Ignored in a scenario: a namespaced object is in the trial's namespace. */
  readonly namespace?: string;
}

/** Where a kind is served. */
export interface KindInfo {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

interface ResourceList {
  readonly resources?: readonly {
    readonly name: string;
    readonly kind: string;
    readonly namespaced: boolean;
    readonly verbs?: readonly string[];
  }[];
}

/** `Kind namespace/name` of a key or manifest. */
export const keyOf = (o: ObjectKey | Manifest): string => {
  const name = 'metadata' in o ? (o.metadata.name ?? o.metadata.generateName ?? '?') : o.name;
  const namespace = 'metadata' in o ? o.metadata.namespace : o.namespace;
  return `${o.kind} ${namespace ? `${namespace}/` : ''}${name}`;
};

/** The apiserver's kinds, looked up by discovery as they are asked for. */
export class Objects {
  readonly #api: ApiClient;
  readonly #kinds = new Map<string, KindInfo>();
  readonly #fieldManager: string;

  constructor(api: ApiClient, fieldManager = 'opkit-chaos') {
    this.#api = api;
    this.#fieldManager = fieldManager;
  }

  /** Where `kind` of `apiVersion` is served; undefined when it is not (yet). */
  async kind(apiVersion: string, kind: string): Promise<KindInfo | undefined> {
    const key = `${apiVersion}/${kind}`;
    const known = this.#kinds.get(key);
    if (known !== undefined) return known;
    const [group, version] = apiVersion.includes('/') ? apiVersion.split('/', 2) : ['', apiVersion];
    const path = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const res = await this.#api.request<ResourceList>({ path });
    if (res.status !== 200) return undefined;
    for (const r of res.body.resources ?? []) {
      if (r.name.includes('/')) continue;
      this.#kinds.set(`${apiVersion}/${r.kind}`, {
        group: group ?? '',
        version: version ?? '',
        plural: r.name,
        namespaced: r.namespaced,
      });
    }
    return this.#kinds.get(key);
  }

  /** The kind served as `plural` in `group` (its preferred version); undefined when it is not served or not listed. */
  async resource(group: string, plural: string): Promise<{ apiVersion: string; kind: string } | undefined> {
    let apiVersion = 'v1';
    if (group !== '') {
      const res = await this.#api.request<{ preferredVersion?: { groupVersion?: string } }>({ path: `/apis/${group}` });
      const preferred = res.status === 200 ? res.body.preferredVersion?.groupVersion : undefined;
      if (preferred === undefined) return undefined;
      apiVersion = preferred;
    }
    const path = group === '' ? '/api/v1' : `/apis/${apiVersion}`;
    const res = await this.#api.request<ResourceList>({ path });
    const found =
      res.status === 200
        ? res.body.resources?.find((r) => r.name === plural && (r.verbs ?? []).includes('list'))
        : undefined;
    return found === undefined ? undefined : { apiVersion, kind: found.kind };
  }

  /** The collection path of a kind, in `namespace` when it is namespaced. */
  async path(apiVersion: string, kind: string, namespace?: string): Promise<string | undefined> {
    const k = await this.kind(apiVersion, kind);
    if (k === undefined) return undefined;
    const root = k.group === '' ? `/api/${k.version}` : `/apis/${k.group}/${k.version}`;
    return `${root}${k.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${k.plural}`;
  }

  /**
   * Server-side apply of `o` (its whole content, forced) as the user; resolves to the stored object. An answer that
   * may pass when tried again (5xx, 429, none) is tried again for up to `retryMs`, then `ApiRequestFailed` is thrown;
   * any other refusal is the input's fault (`ChaosInput`).
   */
  async apply(o: Manifest, what: string, retryMs = 0): Promise<Manifest> {
    const name = o.metadata.name;
    if (!name) throw new TestenvError('ChaosInput', `${what}: ${keyOf(o)} has no metadata.name (apply needs a name)`);
    const collection = await this.#collection(o.apiVersion, o.kind, o.metadata.namespace, what);
    const res = await this.#retried<Manifest>(`apply ${keyOf(o)}`, retryMs, {
      method: 'PATCH',
      path: `${collection}/${encodeURIComponent(name)}?fieldManager=${this.#fieldManager}&force=true`,
      body: o,
      contentType: 'application/apply-patch+yaml',
    });
    if (res.status >= 300) throw refused(what, `apply ${keyOf(o)}`, res.status, res.text);
    return res.body;
  }

  /** Deletes the object (background propagation, the default of `kubectl delete`); gone already is fine. As `apply` retries. */
  async delete(key: ObjectKey, what: string, retryMs = 0): Promise<void> {
    const collection = await this.#collection(key.apiVersion, key.kind, key.namespace, what);
    const res = await this.#retried(`delete ${keyOf(key)}`, retryMs, {
      method: 'DELETE',
      path: `${collection}/${encodeURIComponent(key.name)}`,
      body: { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' },
    });
    if (res.status >= 300 && res.status !== 404) throw refused(what, `delete ${keyOf(key)}`, res.status, res.text);
  }

  /** `req`, tried again every 500 ms while its answer may change (5xx, 429, none) and `retryMs` allows. */
  async #retried<T>(action: string, retryMs: number, req: ApiRequest): Promise<ApiResponse<T>> {
    const deadline = Date.now() + retryMs;
    for (;;) {
      const res = await this.#api.request<T>(req).catch((err: Error) => err);
      if (!(res instanceof Error) && res.status < 500 && res.status !== 429) return res;
      const why = res instanceof Error ? res.message : `(${res.status}) ${reasonOf(res.text)}`;
      if (retryMs === 0) {
        if (res instanceof Error) throw res;
        return res;
      }
      if (Date.now() >= deadline)
        throw new TestenvError(
          'ApiRequestFailed',
          `the apiserver did not ${action} for ${Math.round(retryMs / 1000)} s: ${why}`,
        );
      await sleep(500);
    }
  }

  /**
   * The objects of a kind in `namespace` (every namespace when undefined); none when the kind is not served. With
   * `retryMs`, an answer that may change (5xx, 429, none) is tried again that long, then `ApiRequestFailed` is thrown;
   * without, a failed list is no objects.
   */
  async list(apiVersion: string, kind: string, namespace?: string, retryMs?: number): Promise<Manifest[]> {
    const path = await this.path(apiVersion, kind, namespace);
    if (path === undefined) return [];
    const req = { path };
    // with `retryMs`, an answer that may change is tried again, and a failure thrown rather than read as no objects
    const res =
      retryMs === undefined
        ? await this.#api.request<{ items?: Manifest[] }>(req)
        : await this.#retried<{ items?: Manifest[] }>(`list ${kind}`, retryMs, req);
    if (res.status !== 200 && retryMs !== undefined)
      throw new TestenvError('ApiRequestFailed', `the apiserver refused to list ${kind} (${res.status})`);
    if (res.status !== 200) return [];
    return (res.body.items ?? []).map((item) => ({ ...item, apiVersion, kind }));
  }

  /** The object, or undefined when it is not there. */
  async get(key: ObjectKey): Promise<Manifest | undefined> {
    const collection = await this.path(key.apiVersion, key.kind, key.namespace);
    if (collection === undefined) return undefined;
    const res = await this.#api.request<Manifest>({ path: `${collection}/${encodeURIComponent(key.name)}` });
    return res.status === 200 ? res.body : undefined;
  }

  async #collection(apiVersion: string, kind: string, namespace: string | undefined, what: string): Promise<string> {
    const path = await this.path(apiVersion, kind, namespace);
    if (path === undefined)
      throw new TestenvError(
        'ChaosInput',
        `${what}: the apiserver serves no kind ${kind} in ${apiVersion} (is its CRD among the project's, and the apiVersion right?)`,
      );
    return path;
  }
}

/** The message of a `Status` answer, else the start of its text. */
function reasonOf(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string }).message ?? text.slice(0, 400);
  } catch {
    return text.slice(0, 400);
  }
}

function refused(what: string, action: string, status: number, text: string): TestenvError {
  return new TestenvError('ChaosInput', `${what}: the apiserver refused to ${action} (${status}): ${reasonOf(text)}`);
}
