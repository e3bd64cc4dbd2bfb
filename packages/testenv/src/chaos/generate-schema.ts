/**
 * @module chaos/generate-schema
 * The structural schema of a CRD version as chaos/generate reads it, and the **sites** of an object: each property of
 * its spec a single change can touch (a scalar to set, an optional property to add or remove, an array or a map to
 * add an item to or remove one from), found by walking the schema beside the object as stored (defaults applied).
 *
 * Guarantees: sites are listed in schema order (the same object, the same sites); only `spec` and what is under it
 * is walked, never `metadata` or `status`; a node the schema leaves open (`x-kubernetes-preserve-unknown-fields`
 * without properties) or types only by `anyOf` (other than int-or-string) is no site. Path helpers never change
 * their input.
 */

/** The parts of a structural schema (OpenAPI v3 as the apiserver takes it) that values are chosen by. */
export interface Schema {
  readonly type?: string;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly required?: readonly string[];
  readonly items?: Schema;
  readonly additionalProperties?: Schema | boolean;
  readonly enum?: readonly unknown[];
  readonly default?: unknown;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly exclusiveMinimum?: boolean;
  readonly exclusiveMaximum?: boolean;
  readonly multipleOf?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly maxProperties?: number;
  readonly 'x-kubernetes-int-or-string'?: boolean;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  readonly 'x-kubernetes-list-type'?: string;
  readonly 'x-kubernetes-list-map-keys'?: readonly string[];
}

/** A JSON object. */
export type Json = Record<string, unknown>;

/** Where a value sits in an object: property names and array indexes, from the root (`['spec', 'ports', 0]`). */
export type Path = readonly (string | number)[];

/** One property a change can touch. */
export interface Site {
  readonly path: Path;
  readonly schema: Schema;
  /** Its value in the stored object; undefined when it is not set. */
  readonly current: unknown;
  /** Whether it may be left out (not required by its parent, and not an array item or map entry). */
  readonly optional: boolean;
}

export const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `spec.ports[0].name` */
export const pathText = (path: Path): string =>
  path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');

/** The schema of `version` of a CRD object (its `openAPIV3Schema`); undefined when it has none. */
export function schemaOf(crd: object, version: string): Schema | undefined {
  const spec = (crd as { spec?: { versions?: { name?: string; schema?: { openAPIV3Schema?: Schema } }[] } }).spec;
  return spec?.versions?.find((v) => v.name === version)?.schema?.openAPIV3Schema;
}

/** Whether a value of `schema` can be chosen at all: it has a type (or is int-or-string, or an enum). */
export function typed(schema: Schema): boolean {
  if (schema['x-kubernetes-int-or-string'] === true || schema.enum !== undefined) return true;
  if (schema.type === 'object')
    return schema.properties !== undefined || typeof schema.additionalProperties === 'object';
  return schema.type !== undefined;
}

/** The sites of `spec` (see the module comment): `specSchema` beside `spec`, as stored. */
export function sitesOf(specSchema: Schema, spec: unknown): Site[] {
  const out: Site[] = [];
  walk(specSchema, spec, ['spec'], out);
  return out;
}

function walk(schema: Schema, value: unknown, path: Path, out: Site[]): void {
  if (isObject(value) && schema.properties !== undefined) {
    const required = new Set(schema.required ?? []);
    for (const [name, child] of Object.entries(schema.properties)) {
      if (!typed(child)) continue;
      const at = [...path, name];
      out.push({ path: at, schema: child, current: value[name], optional: !required.has(name) });
      if (value[name] !== undefined) walk(child, value[name], at, out);
    }
  } else if (isObject(value) && typeof schema.additionalProperties === 'object') {
    const child = schema.additionalProperties;
    for (const [key, v] of Object.entries(value)) each(child, v, [...path, key], out);
  } else if (Array.isArray(value) && schema.items !== undefined) {
    const child = schema.items;
    value.forEach((v, i) => {
      each(child, v, [...path, i], out);
    });
  }
}

/** An array item or a map entry: a site when it is a scalar (the array or map adds and removes it), walked into. */
function each(schema: Schema, value: unknown, path: Path, out: Site[]): void {
  if (!typed(schema)) return;
  if (!isObject(value) && !Array.isArray(value)) out.push({ path, schema, current: value, optional: false });
  walk(schema, value, path, out);
}

/** The value at `path` of `root`; undefined when it is not there. */
export function valueAt(root: unknown, path: Path): unknown {
  let v = root;
  for (const p of path) {
    if (typeof p === 'number') v = Array.isArray(v) ? v[p] : undefined;
    else v = isObject(v) ? v[p] : undefined;
  }
  return v;
}

/**
 * `root` with the value at `path` set to `value`, or removed when `value` is undefined. A container on the way that
 * `root` lacks is taken from `fallback` (the stored object, where defaults filled it in), else made empty.
 */
export function withValue(root: Json, path: Path, value: unknown, fallback: unknown): Json {
  type Node = Record<string | number, unknown>;
  const out = structuredClone(root);
  let node: Node = out;
  for (const [i, p] of path.slice(0, -1).entries()) {
    let next = node[p];
    if (typeof next !== 'object' || next === null) {
      const stored = valueAt(fallback, path.slice(0, i + 1));
      next = typeof stored === 'object' && stored !== null ? structuredClone(stored) : {};
      node[p] = next;
    }
    node = next as Node;
  }
  const last = path.at(-1);
  if (last === undefined) return out;
  const list: unknown = node;
  if (value !== undefined) node[last] = structuredClone(value);
  else if (Array.isArray(list) && typeof last === 'number') (list as unknown[]).splice(last, 1);
  else delete node[last];
  return out;
}

/** JSON with object keys sorted: equal values, equal text (the stored object's key order is the validator's). */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (isObject(v))
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`)
      .join(',')}}`;
  return JSON.stringify(v) ?? 'undefined';
}
