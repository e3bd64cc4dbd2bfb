/**
 * @module tools/kinds/schemas
 * The schema files: for every generated type `X` of packages/runtime/src/client/kinds/, a constant `XSchema` in
 * packages/runtime/src/client/schemas/<file>.ts — the structural OpenAPI v3 schema a CustomResourceDefinition may hold
 * for a field of that type, as `Type.Unsafe<X>(…)` (so `Static<typeof XSchema>` is `X`), with upstream's descriptions.
 * The OpenAPI node becomes what the apiserver accepts inside a CRD and what controller-gen writes:
 * - a reference is the referenced schema's constant (a field's own description spread over it);
 * - an int-or-string is `x-kubernetes-int-or-string` with `anyOf: [integer, string]`; a quantity too, with
 *   controller-gen's pattern; `Time` and `MicroTime` are `date-time` strings; `RawExtension` and `FieldsV1` keep
 *   unknown fields (`x-kubernetes-preserve-unknown-fields`), as their types are records; an empty struct (a marker
 *   such as `WorkloadPodGroupAllDisruptionMode`) is an object with no fields, as controller-gen writes it;
 * - `x-kubernetes-list-type`, `-list-map-keys` and `-map-type` are kept; a map list one of whose keys is neither
 *   required nor defaulted (which a CRD refuses) becomes `atomic`; the patch strategies, group-version-kinds, unions
 *   and enums are left out (the committed OpenAPI of Kubernetes has no enums either: they are not an API guarantee);
 * - a default is kept when it is not its type's zero value (`protocol: TCP`), or when its field is a map list's key
 *   that the item does not require (a CRD needs one or the other); zero values (`""`, `0`, `false`, `{}`) would
 *   otherwise be written into every stored object;
 * - `ObjectMeta` is what controller-gen's `generateEmbeddedObjectMeta` writes: `name`, `namespace`, `labels`,
 *   `annotations` and `finalizers` (anything else in an embedded template's metadata is pruned; a `creationTimestamp:
 *   null` copied from `kubectl get -o yaml` is not refused).
 *
 * Guarantees: a pure function of the definitions (the same input gives the same bytes); a definition that is part of
 * a reference cycle, or reaches one, gets no schema (only apiextensions' `JSONSchemaProps` is recursive, and the kinds
 * that hold it): `RECURSIVE` lists them; within a file every constant comes after the ones it uses, and the files'
 * imports of each other form no cycle (checked: a cycle throws).
 */
import { QUANTITY_PATTERN } from '@opkit/runtime/quantity';
import type { Definition, EmitContext } from './emit.ts';
import { KindsGenError, type Schema } from './openapi.ts';
import { propertyKey, refOf } from './types.ts';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const OBJECT_META = `${META}.ObjectMeta`;
/** The fields of an embedded `ObjectMeta` a CRD keeps (controller-gen's `generateEmbeddedObjectMeta`). */
const EMBEDDED_META_FIELDS = ['name', 'namespace', 'labels', 'annotations', 'finalizers'];
const INT_OR_STRING = { 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] };
const KEEP_UNKNOWN = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const DATE_TIME = { type: 'string', format: 'date-time' };

/** Definitions written inline, as a JSON value, wherever they are referenced. */
const INLINE: Readonly<Record<string, unknown>> = {
  [`${META}.Time`]: DATE_TIME,
  [`${META}.MicroTime`]: DATE_TIME,
  [`${META}.FieldsV1`]: KEEP_UNKNOWN,
  'io.k8s.apimachinery.pkg.runtime.RawExtension': KEEP_UNKNOWN,
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': INT_OR_STRING,
  'io.k8s.apimachinery.pkg.api.resource.Quantity': { ...INT_OR_STRING, pattern: QUANTITY_PATTERN },
  'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON': { 'x-kubernetes-preserve-unknown-fields': true },
};

/** A value of the emitted code: JSON, or a constant's name (`{ ref }`), or a constant with keys over it. */
export type Code = { readonly ref: string; readonly over?: Readonly<Record<string, Code>> } | JsonCode;
type JsonCode = string | number | boolean | null | readonly Code[] | { readonly [key: string]: Code };

const isRef = (c: Code): c is { ref: string; over?: Record<string, Code> } =>
  typeof c === 'object' && c !== null && !Array.isArray(c) && typeof (c as { ref?: unknown }).ref === 'string';

/** The TypeScript text of `c`. */
export function print(c: Code): string {
  if (isRef(c)) {
    if (!c.over) return c.ref;
    const keys = Object.entries(c.over).map(([k, v]) => `${propertyKey(k)}: ${print(v)}`);
    return `{ ...${c.ref}, ${keys.join(', ')} }`;
  }
  if (Array.isArray(c)) return `[${c.map(print).join(', ')}]`;
  if (c !== null && typeof c === 'object')
    return `{ ${Object.entries(c)
      .map(([k, v]) => `${propertyKey(k)}: ${print(v)}`)
      .join(', ')} }`;
  return JSON.stringify(c);
}

/** Whether `v` is its JSON type's zero value. */
const isZero = (v: unknown): boolean =>
  v === '' || v === 0 || v === false || (typeof v === 'object' && v !== null && Object.keys(v).length === 0);

/** What the emitter knows of the whole generation. */
export interface SchemaContext {
  readonly ctx: EmitContext;
  /** The ids with a schema (the recursive ones left out). */
  readonly emitted: ReadonlySet<string>;
  /** `<definition id>.<field>` of every map list's key that its item does not require (mapKeysOf). */
  readonly mapKeys: ReadonlySet<string>;
  /** Records that a node uses definition `id`, and answers the name of its constant. */
  readonly use: (id: string) => string;
}

/** The schema of one node of definition `owner` (field `field`), as code. */
function node(s: Schema, x: SchemaContext, owner: string, field: string): Code {
  const out = body(s, x);
  if (isRef(out)) {
    const over: Record<string, Code> = {};
    if (s.description) over.description = s.description;
    return Object.keys(over).length > 0 ? { ref: out.ref, over } : out;
  }
  const json = { ...(out as Record<string, Code>) };
  if (s.description) json.description = s.description;
  if (s.default !== undefined && (!isZero(s.default) || x.mapKeys.has(`${owner}.${field}`))) {
    json.default = s.default as Code;
  }
  return json;
}

/** A node without its description and default: a reference, an inline definition or a structural node. */
function body(s: Schema, x: SchemaContext): Code {
  const ref = refOf(s);
  if (ref !== undefined) {
    const inline = INLINE[ref];
    if (inline !== undefined) return inline as Code;
    if (!x.emitted.has(ref)) throw new KindsGenError(`${ref} has no schema (recursive) but a schema uses it`);
    return { ref: x.use(ref) };
  }
  if (s['x-kubernetes-int-or-string'] || s.format === 'int-or-string') return INT_OR_STRING as Code;
  if (s['x-kubernetes-preserve-unknown-fields'] && !s.properties) return KEEP_UNKNOWN as Code;
  switch (s.type) {
    case 'array':
      return arrayNode(s, x);
    case 'object':
      return objectNode(s, x, '');
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      return s.format && s.format !== 'int-or-string' ? { type: s.type, format: s.format } : { type: s.type };
    default:
      return { 'x-kubernetes-preserve-unknown-fields': true };
  }
}

function arrayNode(s: Schema, x: SchemaContext): Code {
  const out: Record<string, Code> = { type: 'array', items: s.items ? node(s.items, x, '', '') : KEEP_UNKNOWN };
  const listType = s['x-kubernetes-list-type'];
  const keys = s['x-kubernetes-list-map-keys'];
  if (listType === 'map' && keys && s.items) {
    const item = refOf(s.items);
    const def = item === undefined ? undefined : x.ctx.definitions.get(item)?.schema;
    const keyed = keys.every((k) => def?.required?.includes(k) || def?.properties?.[k]?.default !== undefined);
    if (keyed) {
      out['x-kubernetes-list-type'] = 'map';
      out['x-kubernetes-list-map-keys'] = [...keys];
    } else out['x-kubernetes-list-type'] = 'atomic';
  } else if (listType !== undefined) out['x-kubernetes-list-type'] = listType;
  return out;
}

/** An object node of definition `owner` ('' inside a field). */
function objectNode(s: Schema, x: SchemaContext, owner: string): Code {
  const extra = s.additionalProperties;
  const out: Record<string, Code> = { type: 'object' };
  if (s.properties !== undefined) {
    const props: Record<string, Code> = {};
    for (const [name, p] of Object.entries(s.properties)) props[name] = node(p, x, owner, name);
    out.properties = props;
    if (s.required && s.required.length > 0) out.required = [...s.required];
  } else if (typeof extra === 'object') out.additionalProperties = node(extra, x, '', '');
  if (s['x-kubernetes-map-type'] !== undefined) out['x-kubernetes-map-type'] = s['x-kubernetes-map-type'];
  return out;
}

/** The schema of a whole definition (an object, a record, or embedded `ObjectMeta`'s subset). */
export function definitionNode(def: Definition, x: SchemaContext): Code {
  const s = def.id === OBJECT_META ? embeddedMeta(def.schema) : def.schema;
  const out = { ...(objectNode(s, x, def.id) as Record<string, Code>) };
  if (def.schema.description) out.description = def.schema.description;
  return out;
}

function embeddedMeta(s: Schema): Schema {
  const properties = Object.fromEntries(
    Object.entries(s.properties ?? {}).filter(([f]) => EMBEDDED_META_FIELDS.includes(f)),
  );
  return { ...s, properties };
}

/** The ids in a reference cycle, or reaching one. */
export function recursiveIds(definitions: ReadonlyMap<string, Definition>): Set<string> {
  const refs = (s: Schema, out: Set<string>): Set<string> => {
    const r = refOf(s);
    if (r !== undefined && definitions.has(r)) out.add(r);
    for (const sub of [s.items, ...Object.values(s.properties ?? {}), ...(s.allOf ?? []), ...(s.oneOf ?? [])])
      if (sub) refs(sub, out);
    if (typeof s.additionalProperties === 'object') refs(s.additionalProperties, out);
    return out;
  };
  const edges = new Map([...definitions].map(([id, d]) => [id, refs(d.schema, new Set())]));
  const bad = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const visit = (id: string, stack: string[]): boolean => {
    if (state.get(id) === 'open') {
      for (const s of stack.slice(stack.indexOf(id))) bad.add(s);
      return true;
    }
    if (state.get(id) === 'done') return bad.has(id);
    state.set(id, 'open');
    let reaches = false;
    for (const next of edges.get(id) ?? []) reaches = visit(next, [...stack, id]) || reaches;
    state.set(id, 'done');
    if (reaches) bad.add(id);
    return bad.has(id);
  };
  for (const id of definitions.keys()) visit(id, []);
  return bad;
}

/** `<definition id>.<field>` of every map list's key that its item does not require, for the defaults kept. */
export function mapKeysOf(definitions: ReadonlyMap<string, Definition>): Set<string> {
  const out = new Set<string>();
  const walk = (s: Schema) => {
    const item = s.items ? refOf(s.items) : undefined;
    const required = item === undefined ? [] : (definitions.get(item)?.schema.required ?? []);
    if (s['x-kubernetes-list-type'] === 'map' && item !== undefined)
      for (const k of s['x-kubernetes-list-map-keys'] ?? []) if (!required.includes(k)) out.add(`${item}.${k}`);
    for (const sub of [s.items, ...Object.values(s.properties ?? {})]) if (sub) walk(sub);
  };
  for (const d of definitions.values()) walk(d.schema);
  return out;
}
