/**
 * @module tools/kinds/openapi
 * The part of an OpenAPI v3 document of a Kubernetes apiserver that the kinds generator reads (paths with their
 * `x-kubernetes-group-version-kind` and `x-kubernetes-action`, and `components.schemas`), and where the documents come
 * from: a running apiserver's `/openapi/v3` discovery and each `/openapi/v3/<api|apis/group>/<version>`, or a folder
 * laid out as k8s.io/kubernetes' `api/openapi-spec/v3/`.
 *
 * Guarantees: the documents are keyed by their discovery path (`api/v1`, `apis/apps/v1`) and read only for the group
 * versions asked for; a document the apiserver does not serve fails the read, naming the path.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A JSON Schema as Kubernetes' OpenAPI v3 documents write one (the fields the generator reads). */
export interface Schema {
  readonly description?: string;
  readonly type?: string;
  readonly format?: string;
  readonly $ref?: string;
  readonly allOf?: readonly Schema[];
  readonly oneOf?: readonly Schema[];
  readonly items?: Schema;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly additionalProperties?: Schema | boolean;
  readonly required?: readonly string[];
  readonly default?: unknown;
  readonly 'x-kubernetes-list-type'?: string;
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
  readonly 'x-kubernetes-map-type'?: string;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-group-version-kind'?: readonly GroupVersionKind[];
}

/** A kind's group, version and name, as the `x-kubernetes-group-version-kind` extension writes it. */
export interface GroupVersionKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
}

/** One operation of a path. */
export interface Operation {
  readonly 'x-kubernetes-action'?: string;
  readonly 'x-kubernetes-group-version-kind'?: GroupVersionKind;
}

/** An OpenAPI v3 document of one group version. */
export interface OpenApiDocument {
  readonly paths?: Readonly<Record<string, Readonly<Record<string, Operation | unknown>>>>;
  readonly components?: { readonly schemas?: Readonly<Record<string, Schema>> };
}

/** The documents of several group versions, keyed by discovery path: `api/v1`, `apis/apps/v1`. */
export type OpenApiDocuments = ReadonlyMap<string, OpenApiDocument>;

/** The discovery path of a group version: `api/v1` for the core group, else `apis/<group>/<version>`. */
export function discoveryPath(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/** What the source needs of an HTTP client: a GET that resolves to the status and the body's text. */
export type Get = (path: string) => Promise<{ readonly status: number; readonly text: string }>;

/** The JSON of a 200 answer to `GET path`. */
async function getJson(get: Get, path: string): Promise<unknown> {
  const res = await get(path);
  if (res.status !== 200) throw new KindsGenError(`GET ${path} answered ${res.status}: ${res.text.slice(0, 200)}`);
  return JSON.parse(res.text);
}

/** Reads the documents of `paths` (discovery paths) from an apiserver through `get`. */
export async function readFromApiserver(get: Get, paths: readonly string[]): Promise<Map<string, OpenApiDocument>> {
  const index = (await getJson(get, '/openapi/v3')) as { paths?: Record<string, { serverRelativeURL?: string }> };
  const served = index.paths ?? {};
  const docs = new Map<string, OpenApiDocument>();
  for (const path of paths) {
    const url = served[path]?.serverRelativeURL;
    if (url === undefined) throw new KindsGenError(`the apiserver serves no OpenAPI v3 document for ${path}`);
    docs.set(path, (await getJson(get, url)) as OpenApiDocument);
  }
  return docs;
}

/** A failure of the kinds generator: a document missing or not what it expects. */
export class KindsGenError extends Error {
  override readonly name = 'KindsGenError';
}

/**
 * Reads the documents of `paths` from a folder laid out as k8s.io/kubernetes' `api/openapi-spec/v3/`
 * (`apis__apps__v1_openapi.json` for `apis/apps/v1`).
 */
export async function readFromDirectory(dir: string, paths: readonly string[]): Promise<Map<string, OpenApiDocument>> {
  const docs = new Map<string, OpenApiDocument>();
  for (const path of paths) {
    const file = join(dir, `${path.replaceAll('/', '__')}_openapi.json`);
    const text = await readFile(file, 'utf8').catch((err: unknown) => {
      throw new KindsGenError(`cannot read ${file}`, { cause: err });
    });
    docs.set(path, JSON.parse(text) as OpenApiDocument);
  }
  return docs;
}
