/**
 * @module crd/schema
 * Turns a TypeBox (JSON Schema) schema into a *structural* OpenAPI v3 schema — the `JSONSchemaProps` JSON that a
 * CustomResourceDefinition's `openAPIV3Schema` holds — so operators describe their resources once, in code.
 *
 * Guarantees: the output uses only keywords the apiserver accepts (TypeBox internals, `$id`, `additionalProperties:
 * false` and `uniqueItems: false` are dropped; draft-style numeric `exclusiveMinimum`/`exclusiveMaximum` become
 * OpenAPI v3 booleans next to `minimum`/`maximum`; `Type.Record(Type.String(), X)` becomes `additionalProperties: X`;
 * literals and unions of literals of one type become `type` + `enum`; `Type.Union([X, Type.Null()])` becomes `X` with
 * `nullable: true`). Every node has a `type` unless it sets `x-kubernetes-int-or-string` or
 * `x-kubernetes-preserve-unknown-fields`. Keys are ordered (`type` first, then alphabetically; `properties` keep their
 * declaration order), so the same schema always gives byte-identical JSON/YAML, and no value is ever `undefined`.
 * Anything that cannot be expressed (refs, tuples, intersections, mixed unions, `uniqueItems: true`, unknown keywords)
 * throws a `CrdSchemaError` naming the JSON path of the field (`spec.env[].value`).
 *
 * Caveats: `allOf`/`anyOf`/`oneOf`/`not` are kept only as value validations (no `type`, `default`, `nullable`,
 * `additionalProperties` or extensions inside, except the two int-or-string patterns), and the fields they name must be
 * declared outside them; CEL rules, regular expressions and formats are passed through unchecked — the apiserver
 * compiles them when the CRD is applied.
 */

import type { TSchema } from '@sinclair/typebox';
import { Kind } from '@sinclair/typebox';
import { OpkitError } from '../errors.ts';

/** Why a schema or a kind definition cannot become a CustomResourceDefinition. */
export type CrdSchemaErrorCode =
  /**
   * A schema or definition that cannot become a valid CRD (an unsupported TypeBox type or keyword, a bad name or
   * version list, a missing conversion webhook): `path` and the message name the field and what to do.
   */
  'InvalidCrdSchema';

/** A schema or definition that cannot become a valid CustomResourceDefinition. */
export class CrdSchemaError extends OpkitError<CrdSchemaErrorCode> {
  override readonly name = 'CrdSchemaError';
  /** Where: a JSON path into the schema (`spec.env[].value`) or a field of a kind definition (`group`); '' = root. */
  readonly path: string;

  constructor(path: string, message: string) {
    super('InvalidCrdSchema', `${path === '' ? '(root)' : path}: ${message}`);
    this.path = path;
  }
}

type Json = Record<string, unknown>;

const TYPES: ReadonlySet<string> = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean']);

/** Annotations without validation meaning that OpenAPI v3 (as the apiserver reads it) does not know: dropped. */
const DROPPED: ReadonlySet<string> = new Set([
  '$id',
  '$schema',
  '$comment',
  'readOnly',
  'writeOnly',
  'deprecated',
  'contentEncoding',
  'contentMediaType',
]);

/** TypeBox `Type.Record(Type.String(), X)` key patterns. */
const ANY_KEY_PATTERNS: ReadonlySet<string> = new Set(['^(.*)$', '^.*$']);

const LIST_TYPES: ReadonlySet<string> = new Set(['atomic', 'set', 'map']);
const MAP_TYPES: ReadonlySet<string> = new Set(['atomic', 'granular']);
const RULE_REASONS: ReadonlySet<string> = new Set([
  'FieldValueInvalid',
  'FieldValueForbidden',
  'FieldValueRequired',
  'FieldValueDuplicate',
]);
const RULE_KEYS = ['rule', 'message', 'messageExpression', 'fieldPath', 'reason', 'optionalOldSelf'] as const;

const TYPE_HINTS: Readonly<Record<string, string>> = {
  Date: 'use Type.String({ format: "date-time" })',
  Uint8Array: 'use Type.String({ format: "byte" }) (base64)',
  bigint: 'use Type.Integer({ format: "int64" }) or a string',
  null: 'a field cannot be only null: make it optional, or Type.Union([X, Type.Null()]) for a nullable X',
};

/**
 * A TypeBox (JSON Schema) schema as a *structural* OpenAPI v3 schema the apiserver accepts (JSONSchemaProps in JSON
 * form). `path` prefixes the JSON paths in errors (e.g. `spec`).
 */
export function structuralSchema(schema: TSchema, path = ''): Record<string, unknown> {
  return convertNode(schema, path);
}

// ---------------------------------------------------------------------------------------------------------------------
// Structural nodes

/**
 * The value-validation keywords, the same on a field and inside allOf/anyOf/oneOf/not: converted into `out`. Returns
 * whether `key` was one of them (minimum/maximum and their exclusive forms are converted afterwards by `bounds`).
 */
function valueKeyword(s: Json, out: Json, key: string, value: unknown, path: string): boolean {
  switch (key) {
    case 'const':
      if (s.enum === undefined) out.enum = [jsonValue(value, childPath(path, 'const'))];
      return true;
    case 'enum':
      if (!Array.isArray(value) || value.length === 0) fail(path, '"enum" must be a non-empty array');
      out.enum = value.map((v, i) => jsonValue(v, `${path}.enum[${i}]`));
      return true;
    case 'format':
    case 'pattern':
      out[key] = stringValue(value, path, key);
      return true;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return true;
    case 'multipleOf':
      out.multipleOf = numberValue(value, path, key);
      if ((out.multipleOf as number) <= 0) fail(path, '"multipleOf" must be greater than 0');
      return true;
    case 'minLength':
    case 'maxLength':
    case 'minItems':
    case 'maxItems':
    case 'minProperties':
    case 'maxProperties':
      out[key] = countValue(value, path, key);
      return true;
    default:
      return false;
  }
}

function convertNode(input: unknown, path: string): Json {
  const s = asSchema(input, path);
  const kind = kindOf(input);
  if (kind === 'Intersect') {
    fail(path, 'Type.Intersect is not supported: merge the objects with Type.Composite or one Type.Object');
  }
  const intOrString = s['x-kubernetes-int-or-string'] === true;
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  if (Array.isArray(s.anyOf) && s.type === undefined && !intOrString && !preserve) return convertUnion(s, path);

  const { type, nullable } = nodeType(s, kind, path);
  const out: Json = {};
  if (type !== undefined) out.type = type;
  if (nullable) out.nullable = true;

  for (const key of Object.keys(s)) {
    const value = s[key];
    if (value === undefined || DROPPED.has(key)) continue;
    if (valueKeyword(s, out, key, value, path) || structureKeyword(s, out, key, value, path)) continue;
    if (extensionKeyword(out, key, value, path)) continue;
    switch (key) {
      case 'type':
      case 'nullable':
        break; // handled by nodeType
      case '$ref':
        fail(path, 'references (Type.Ref, recursive types) are not supported: inline the schema');
        break;
      case 'title':
      case 'description':
        out[key] = stringValue(value, path, key);
        break;
      case 'default':
      case 'example':
        out[key] = jsonValue(value, childPath(path, key));
        break;
      case 'examples':
        if (!Array.isArray(value)) fail(path, '"examples" must be an array');
        if (value.length > 0 && s.example === undefined) out.example = jsonValue(value[0], childPath(path, 'examples'));
        break;
      case 'uniqueItems':
        if (value === true) {
          fail(
            path,
            'uniqueItems: true is not allowed by Kubernetes (quadratic cost): use "x-kubernetes-list-type": "set" instead',
          );
        }
        if (value !== false) fail(path, '"uniqueItems" must be a boolean');
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
      case 'not':
        break; // value validations, converted below against the finished structural node
      case 'externalDocs':
        out.externalDocs = externalDocs(value, path);
        break;
      default:
        fail(path, unsupported(key));
    }
  }
  bounds(s, out, 'minimum', 'exclusiveMinimum', path);
  bounds(s, out, 'maximum', 'exclusiveMaximum', path);
  checkNode(out, kind, path);
  junctors(s, out, intOrString, path);
  return ordered(out);
}

/** The keywords that shape a node: its properties, map values, items and required fields. False for any other key. */
function structureKeyword(s: Json, out: Json, key: string, value: unknown, path: string): boolean {
  switch (key) {
    case 'required': {
      const required = stringArray(value, path, key);
      if (required.length > 0) out.required = [...new Set(required)];
      return true;
    }
    case 'properties':
      out.properties = convertProperties(value, path);
      return true;
    case 'additionalProperties':
      if (value === true) out.additionalProperties = true;
      else if (value !== false) out.additionalProperties = convertNode(value, childPath(path, '*'));
      return true;
    case 'patternProperties':
      if (s.additionalProperties !== undefined && s.additionalProperties !== false) {
        fail(path, 'patternProperties and additionalProperties cannot both be set');
      }
      out.additionalProperties = convertPatternProperties(value, path);
      return true;
    case 'items':
      if (Array.isArray(value)) fail(path, 'tuples (Type.Tuple, array-form items) are not supported: use Type.Array');
      out.items = convertNode(value, `${path}[]`);
      return true;
    default:
      return false;
  }
}

/** The `x-kubernetes-*` extensions. False for any other key. */
function extensionKeyword(out: Json, key: string, value: unknown, path: string): boolean {
  switch (key) {
    case 'x-kubernetes-preserve-unknown-fields':
    case 'x-kubernetes-int-or-string':
    case 'x-kubernetes-embedded-resource':
      if (typeof value !== 'boolean') fail(path, `"${key}" must be a boolean`);
      if (value) out[key] = true;
      return true;
    case 'x-kubernetes-list-type':
      out[key] = oneOfValues(value, LIST_TYPES, path, key);
      return true;
    case 'x-kubernetes-map-type':
      out[key] = oneOfValues(value, MAP_TYPES, path, key);
      return true;
    case 'x-kubernetes-list-map-keys':
      out[key] = stringArray(value, path, key);
      return true;
    case 'x-kubernetes-validations':
      out[key] = validationRules(value, childPath(path, key));
      return true;
    default:
      return false;
  }
}

/** `allOf`/`anyOf`/`oneOf`/`not` of a structural node, with the two int-or-string patterns Kubernetes allows. */
function junctors(s: Json, out: Json, intOrString: boolean, path: string): void {
  const structural = { ...out };
  for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
    const value = s[key];
    if (value === undefined) continue;
    if (!Array.isArray(value) || value.length === 0) fail(path, `"${key}" must be a non-empty array`);
    if (key === 'anyOf' && intOrString && isIntOrStringPair(value)) {
      out.anyOf = intOrStringPair();
      continue;
    }
    out[key] = value.map((m, i) => {
      const p = `${path}.${key}[${i}]`;
      return (
        (key === 'allOf' && i === 0 && intOrString && convertIntOrStringAllOf(m, p)) || convertJunctor(m, p, structural)
      );
    });
  }
  if (s.not !== undefined) out.not = convertJunctor(s.not, `${path}.not`, structural);
}

/** The node's OpenAPI `type` (one of TYPES, or undefined) and whether it is nullable. */
function nodeType(s: Json, kind: string | undefined, path: string): { type: string | undefined; nullable: boolean } {
  let type = s.type;
  let nullable = s.nullable === true;
  if (s.nullable !== undefined && typeof s.nullable !== 'boolean') fail(path, '"nullable" must be a boolean');
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== 'null');
    if (types.length !== 1) fail(path, `a node has exactly one type, not ${JSON.stringify(type)}`);
    nullable ||= types.length < type.length;
    type = types[0];
  }
  if (type === undefined) type = inferType(s);
  if (type === undefined) return { type, nullable };
  if (typeof type !== 'string' || !TYPES.has(type)) {
    const name = String(type);
    const hint = TYPE_HINTS[name] ?? TYPE_HINTS[kind ?? ''];
    fail(path, `unsupported type "${name}"${kind && kind !== name ? ` (Type.${kind})` : ''}${hint ? `: ${hint}` : ''}`);
  }
  return { type, nullable };
}

/** The type of a literal or untyped enum, when all its values have one primitive type. */
function inferType(s: Json): string | undefined {
  const values = s.const !== undefined ? [s.const] : Array.isArray(s.enum) ? s.enum : [];
  const types = new Set(values.filter((v) => v !== null).map(primitiveType));
  if (types.size !== 1) return undefined;
  const [t] = types;
  return t;
}

function primitiveType(v: unknown): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return 'number';
  return Array.isArray(v) ? 'array' : typeof v;
}

/** Structural invariants the apiserver would reject later, checked now with the path at fault. */
function checkNode(out: Json, kind: string | undefined, path: string): void {
  const type = out.type;
  const preserve = out['x-kubernetes-preserve-unknown-fields'] === true;
  const intOrString = out['x-kubernetes-int-or-string'] === true;
  if (type === undefined && !preserve && !intOrString) {
    if (kind === 'Any' || kind === 'Unknown') {
      fail(
        path,
        `Type.${kind} has no type: add 'x-kubernetes-preserve-unknown-fields': true to keep arbitrary data ` +
          `(e.g. Type.Unknown({ 'x-kubernetes-preserve-unknown-fields': true })), or give it a concrete type`,
      );
    }
    fail(
      path,
      'has no type: every field needs one, unless it sets x-kubernetes-int-or-string or preserve-unknown-fields',
    );
  }
  if (preserve && intOrString) {
    fail(path, 'x-kubernetes-int-or-string and x-kubernetes-preserve-unknown-fields cannot both be set');
  }
  const properties = out.properties as Json | undefined;
  const hasProperties = properties !== undefined && Object.keys(properties).length > 0;
  if ((properties !== undefined || out.additionalProperties !== undefined) && type !== undefined && type !== 'object') {
    fail(path, `properties need type "object", not "${String(type)}"`);
  }
  if (hasProperties && isObject(out.additionalProperties)) {
    fail(path, 'properties and additionalProperties (Type.Record) are mutually exclusive in a structural schema');
  }
  if (out.items !== undefined && type !== 'array') fail(path, `items need type "array", not "${String(type)}"`);
  if (type === 'array' && out.items === undefined) fail(path, 'an array needs items (Type.Array(...))');
  if (Array.isArray(out.required) && properties !== undefined && out.additionalProperties === undefined && !preserve) {
    for (const name of out.required) {
      if (typeof name === 'string' && !(name in properties)) fail(path, `required field "${name}" is not a property`);
    }
  }
  if (out['x-kubernetes-map-type'] !== undefined && type !== 'object') {
    fail(path, 'x-kubernetes-map-type needs type "object"');
  }
  if (out['x-kubernetes-embedded-resource'] === true) {
    if (type !== 'object') fail(path, 'x-kubernetes-embedded-resource needs type "object"');
    if (out.additionalProperties !== undefined) {
      fail(path, 'x-kubernetes-embedded-resource cannot be combined with additionalProperties');
    }
    if (!preserve && !hasProperties) {
      fail(path, 'x-kubernetes-embedded-resource needs properties or x-kubernetes-preserve-unknown-fields: true');
    }
  }
  checkListType(out, path);
}

function checkListType(out: Json, path: string): void {
  const listType = out['x-kubernetes-list-type'];
  const mapKeys = out['x-kubernetes-list-map-keys'];
  if (listType !== undefined && out.type !== 'array') fail(path, 'x-kubernetes-list-type needs type "array"');
  if (mapKeys !== undefined && listType !== 'map') {
    fail(path, 'x-kubernetes-list-map-keys needs "x-kubernetes-list-type": "map"');
  }
  if (listType !== 'map') return;
  if (!Array.isArray(mapKeys) || mapKeys.length === 0) {
    fail(path, '"x-kubernetes-list-type": "map" needs "x-kubernetes-list-map-keys" naming the key fields');
  }
  const items = out.items as Json;
  if (items.type !== 'object') fail(`${path}[]`, 'items of a list of type map must be objects');
  const properties = (items.properties ?? {}) as Json;
  const required = Array.isArray(items.required) ? items.required : [];
  for (const key of mapKeys) {
    const prop = properties[key as string];
    if (!isObject(prop)) fail(`${path}[]`, `list map key "${String(key)}" is not a property of the items`);
    if (prop.type === 'object' || prop.type === 'array') {
      fail(`${path}[].${String(key)}`, 'a list map key must be a scalar');
    }
    if (!required.includes(key) && prop.default === undefined) {
      fail(`${path}[].${String(key)}`, 'a list map key must be required or have a default');
    }
  }
}

function convertProperties(value: unknown, path: string): Json {
  if (!isObject(value)) fail(path, '"properties" must be an object');
  const out: Json = {};
  for (const name of Object.keys(value)) {
    define(out, name, convertNode(value[name], childPath(path, name)));
  }
  return out;
}

function convertPatternProperties(value: unknown, path: string): Json {
  if (!isObject(value)) fail(path, '"patternProperties" must be an object');
  const patterns = Object.keys(value);
  const [pattern] = patterns;
  if (patterns.length !== 1 || pattern === undefined || !ANY_KEY_PATTERNS.has(pattern)) {
    fail(
      path,
      `patternProperties ${JSON.stringify(patterns)} cannot be expressed: Kubernetes maps take any string key, so use ` +
        `Type.Record(Type.String(), X) and check keys with a CEL rule (x-kubernetes-validations) if needed`,
    );
  }
  return convertNode(value[pattern], childPath(path, '*'));
}

/** `Type.Union`: an enum of literals of one type, or `X | null`; anything else is not structural. */
function convertUnion(s: Json, path: string): Json {
  const members = flattenUnion(s.anyOf, path);
  const rest: Json = {};
  for (const key of Object.keys(s)) if (key !== 'anyOf') define(rest, key, s[key]);
  const others = members.filter((m) => m.type !== 'null');
  const nullable = others.length < members.length || s.nullable === true;
  if (others.length === 0) fail(path, 'a union of only null has no type');

  if (others.every(isLiteral)) {
    const values = others.flatMap(literalValues);
    const types = new Set(others.map((m) => (typeof m.type === 'string' ? m.type : inferType(m))));
    if (types.size !== 1) {
      fail(
        path,
        `a union of literals of different types (${[...types].join(', ')}) is not structural: use literals of one type ` +
          `(an enum), or Type.Union([Type.Integer(), Type.String()], { 'x-kubernetes-int-or-string': true })`,
      );
    }
    const [type] = types;
    const unique = dedupe(values);
    if (nullable) unique.push(null);
    return convertNode({ ...rest, type, enum: unique, ...(nullable ? { nullable: true } : {}) }, path);
  }

  const [only] = others;
  if (others.length === 1 && only !== undefined && nullable) {
    const merged: Json = {};
    for (const key of Object.keys(only)) define(merged, key, only[key]);
    for (const key of Object.keys(rest)) define(merged, key, rest[key]);
    merged.nullable = true;
    if (Array.isArray(merged.enum) && !merged.enum.includes(null)) merged.enum = [...merged.enum, null];
    return convertNode(merged, path);
  }

  const described = others.map((m) => (typeof m.type === 'string' ? m.type : (kindOf(m) ?? 'schema'))).join(' | ');
  return fail(
    path,
    `a union of ${described} is not structural (every field has one type): use a union of literals of one type ` +
      `(an enum), Type.Union([Type.Integer(), Type.String()], { 'x-kubernetes-int-or-string': true }) for ` +
      `int-or-string values, or x-kubernetes-preserve-unknown-fields for free-form data`,
  );
}

function flattenUnion(anyOf: unknown, path: string): Json[] {
  if (!Array.isArray(anyOf) || anyOf.length === 0) fail(path, '"anyOf" must be a non-empty array');
  return anyOf.flatMap((m, i) => {
    const member = asSchema(m, `${path}.anyOf[${i}]`);
    return Array.isArray(member.anyOf) && member.type === undefined ? flattenUnion(member.anyOf, path) : [member];
  });
}

function isLiteral(m: Json): boolean {
  return m.const !== undefined || (Array.isArray(m.enum) && m.enum.length > 0);
}

function literalValues(m: Json): unknown[] {
  return m.const !== undefined ? [m.const] : Array.isArray(m.enum) ? m.enum : [];
}

function dedupe(values: unknown[]): unknown[] {
  const seen = new Set<string>();
  const out: unknown[] = [];
  for (const v of values) {
    const key = JSON.stringify(v);
    if (!seen.has(key)) {
      seen.add(key);
      out.push(v);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Value validations inside allOf / anyOf / oneOf / not

/**
 * A sub-schema of a logical junctor: value validations only. `structural` is the node it constrains (the enclosing
 * structural schema at the same position), used to drop a redundant `type` and to check that every field named here
 * is declared there.
 */
function convertJunctor(input: unknown, path: string, structural: Json | undefined): Json {
  const s = asSchema(input, path);
  const out: Json = {};
  for (const key of Object.keys(s)) {
    const value = s[key];
    if (value === undefined || DROPPED.has(key) || valueKeyword(s, out, key, value, path)) continue;
    switch (key) {
      case 'title':
      case 'description':
      case 'example':
      case 'examples':
        break; // annotations are not allowed here, and mean nothing for validation
      case 'type':
        if (structural?.type === value) break;
        fail(path, 'a type inside allOf/anyOf/oneOf/not is not structural: set it on the field itself');
        break;
      case 'additionalProperties':
        if (value !== false) fail(path, 'additionalProperties inside allOf/anyOf/oneOf/not is not structural');
        break;
      case 'nullable':
        if (value !== false) fail(path, 'nullable inside allOf/anyOf/oneOf/not is not structural');
        break;
      case 'default':
        fail(path, 'a default inside allOf/anyOf/oneOf/not is not structural: set it on the field itself');
        break;
      case '$ref':
        fail(path, 'references (Type.Ref, recursive types) are not supported: inline the schema');
        break;
      case 'uniqueItems':
        if (value !== false) fail(path, 'uniqueItems: true is not allowed: use "x-kubernetes-list-type": "set"');
        break;
      case 'required': {
        const required = stringArray(value, path, key);
        if (required.length > 0) out.required = required;
        break;
      }
      case 'properties':
        out.properties = junctorProperties(value, path, structural);
        break;
      case 'items': {
        const items = isObject(structural?.items) ? structural.items : undefined;
        if (items === undefined) fail(path, 'items inside allOf/anyOf/oneOf/not must also be declared on the field');
        out.items = convertJunctor(value, `${path}[]`, items);
        break;
      }
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        out[key] = (Array.isArray(value) ? value : fail(path, `"${key}" must be a non-empty array`)).map((m, i) =>
          convertJunctor(m, `${path}.${key}[${i}]`, structural),
        );
        break;
      case 'not':
        out.not = convertJunctor(value, `${path}.not`, structural);
        break;
      default:
        fail(
          path,
          key.startsWith('x-kubernetes-') ? `${key} inside allOf/anyOf/oneOf/not is not structural` : unsupported(key),
        );
    }
  }
  bounds(s, out, 'minimum', 'exclusiveMinimum', path);
  bounds(s, out, 'maximum', 'exclusiveMaximum', path);
  return ordered(out);
}

function junctorProperties(value: unknown, path: string, structural: Json | undefined): Json {
  if (!isObject(value)) fail(path, '"properties" must be an object');
  const declared = isObject(structural?.properties) ? structural.properties : {};
  const out: Json = {};
  for (const name of Object.keys(value)) {
    const p = childPath(path, name);
    if (name === 'metadata') fail(p, 'metadata cannot be constrained inside allOf/anyOf/oneOf/not');
    const counterpart = declared[name];
    if (!isObject(counterpart)) {
      fail(p, 'a field named inside allOf/anyOf/oneOf/not must also be declared in the properties of the object');
    }
    define(out, name, convertJunctor(value[name], p, counterpart));
  }
  return out;
}

/** `allOf[0]` of an int-or-string node may hold the `anyOf: [{type: integer}, {type: string}]` pattern. */
function convertIntOrStringAllOf(member: unknown, path: string): Json | undefined {
  const m = asSchema(member, path);
  if (!isIntOrStringPair(m.anyOf)) return undefined;
  const rest: Json = {};
  for (const key of Object.keys(m)) if (key !== 'anyOf') define(rest, key, m[key]);
  return ordered({ ...convertJunctor(rest, path, undefined), anyOf: intOrStringPair() });
}

function isIntOrStringPair(value: unknown): boolean {
  if (!Array.isArray(value) || value.length !== 2) return false;
  const types = value.map((m) => {
    if (!isObject(m)) return undefined;
    const keys = Object.keys(m).filter((k) => !DROPPED.has(k) && k !== 'title' && k !== 'description');
    return keys.length === 1 && keys[0] === 'type' ? m.type : undefined;
  });
  return types.includes('integer') && types.includes('string');
}

function intOrStringPair(): Json[] {
  return [{ type: 'integer' }, { type: 'string' }];
}

// ---------------------------------------------------------------------------------------------------------------------
// Keyword values

/** OpenAPI v3 bounds: `minimum` + boolean `exclusiveMinimum`; draft-6+ numeric exclusives are converted. */
function bounds(
  s: Json,
  out: Json,
  key: 'minimum' | 'maximum',
  exclusiveKey: 'exclusiveMinimum' | 'exclusiveMaximum',
  path: string,
): void {
  const inclusive = s[key] === undefined ? undefined : numberValue(s[key], path, key);
  const exclusive = s[exclusiveKey];
  if (typeof exclusive === 'number') {
    if (!Number.isFinite(exclusive)) fail(path, `"${exclusiveKey}" must be a finite number`);
    const stricter = inclusive === undefined || (key === 'minimum' ? exclusive >= inclusive : exclusive <= inclusive);
    if (stricter) {
      out[key] = exclusive;
      out[exclusiveKey] = true;
    } else {
      out[key] = inclusive;
    }
    return;
  }
  if (exclusive !== undefined && typeof exclusive !== 'boolean') {
    fail(path, `"${exclusiveKey}" must be a number or a boolean`);
  }
  if (exclusive === true && inclusive === undefined) fail(path, `"${exclusiveKey}": true needs "${key}"`);
  if (inclusive !== undefined) out[key] = inclusive;
  if (exclusive === true) out[exclusiveKey] = true;
}

function validationRules(value: unknown, path: string): Json[] {
  if (!Array.isArray(value)) fail(path, 'must be an array of { rule, message?, … }');
  return value.map((r, i) => {
    const p = `${path}[${i}]`;
    if (!isObject(r)) fail(p, 'must be an object { rule, message?, … }');
    for (const key of Object.keys(r)) {
      if (!(RULE_KEYS as readonly string[]).includes(key) && r[key] !== undefined) {
        fail(p, `unknown field "${key}" (expected ${RULE_KEYS.join(', ')})`);
      }
    }
    if (typeof r.rule !== 'string' || r.rule.trim() === '') fail(p, 'rule must be a non-empty CEL expression');
    if (typeof r.message === 'string' && /[\r\n]/.test(r.message)) fail(p, 'message must not contain line breaks');
    if (/[\r\n]/.test(r.rule) && r.message === undefined) fail(p, 'a rule with line breaks needs a message');
    if (r.reason !== undefined && (typeof r.reason !== 'string' || !RULE_REASONS.has(r.reason))) {
      fail(p, `reason must be one of ${[...RULE_REASONS].join(', ')}`);
    }
    const out: Json = {};
    for (const key of RULE_KEYS) {
      const v = r[key];
      if (v === undefined) continue;
      if (key === 'optionalOldSelf' ? typeof v !== 'boolean' : typeof v !== 'string' || v.trim() === '') {
        fail(p, `${key} must be ${key === 'optionalOldSelf' ? 'a boolean' : 'a non-empty string'}`);
      }
      out[key] = v;
    }
    return out;
  });
}

function externalDocs(value: unknown, path: string): Json {
  if (!isObject(value)) fail(path, '"externalDocs" must be an object { description?, url? }');
  const out: Json = {};
  for (const key of Object.keys(value).sort()) {
    if (key !== 'description' && key !== 'url') fail(path, `unknown externalDocs field "${key}"`);
    if (value[key] !== undefined) out[key] = stringValue(value[key], path, `externalDocs.${key}`);
  }
  return out;
}

/** A deep copy of a JSON value (defaults, examples, enum values); object fields that are undefined are left out. */
function jsonValue(value: unknown, path: string): unknown {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail(path, `${value} is not a JSON number`);
    return value;
  }
  if (Array.isArray(value)) return value.map((v, i) => jsonValue(v, `${path}[${i}]`));
  if (isObject(value) && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    const out: Json = {};
    for (const key of Object.keys(value)) {
      if (value[key] !== undefined) define(out, key, jsonValue(value[key], childPath(path, key)));
    }
    return out;
  }
  return fail(path, `${typeof value === 'object' ? 'a non-plain object' : typeof value} is not a JSON value`);
}

function stringValue(value: unknown, path: string, key: string): string {
  if (typeof value !== 'string') fail(path, `"${key}" must be a string`);
  return value;
}

function numberValue(value: unknown, path: string, key: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, `"${key}" must be a finite number`);
  return value;
}

function countValue(value: unknown, path: string, key: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    fail(path, `"${key}" must be a non-negative integer`);
  }
  return value;
}

function stringArray(value: unknown, path: string, key: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    fail(path, `"${key}" must be an array of strings`);
  }
  return [...value];
}

function oneOfValues(value: unknown, allowed: ReadonlySet<string>, path: string, key: string): string {
  if (typeof value !== 'string' || !allowed.has(value))
    fail(path, `"${key}" must be one of ${[...allowed].join(', ')}`);
  return value;
}

function unsupported(key: string): string {
  if (key.startsWith('x-kubernetes-')) return `unknown Kubernetes extension "${key}"`;
  if (key === 'additionalItems') return 'tuples (Type.Tuple) are not supported: use Type.Array';
  if (key === '$defs' || key === 'definitions') return 'definitions are not supported: inline the schemas';
  if (key === 'unevaluatedProperties') return 'Type.Intersect is not supported: use Type.Composite';
  return `keyword "${key}" is not allowed in a Kubernetes structural schema`;
}

// ---------------------------------------------------------------------------------------------------------------------
// Helpers

function asSchema(value: unknown, path: string): Json {
  if (!isObject(value)) fail(path, `expected a schema object, got ${Array.isArray(value) ? 'an array' : typeof value}`);
  return value;
}

function kindOf(value: unknown): string | undefined {
  if (!isObject(value)) return undefined;
  const kind = (value as { [Kind]?: unknown })[Kind];
  return typeof kind === 'string' ? kind : undefined;
}

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function childPath(path: string, name: string): string {
  return path === '' ? name : `${path}.${name}`;
}

/** Sets a key that may come from user data (e.g. `__proto__` as a property name) as a plain own property. */
function define(target: Json, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `type` first, then the other keywords alphabetically: the byte-stable order of generated manifests. */
function ordered(node: Json): Json {
  const keys = Object.keys(node).sort((a, b) => (a === 'type' ? -1 : b === 'type' ? 1 : a < b ? -1 : a > b ? 1 : 0));
  const out: Json = {};
  for (const key of keys) if (node[key] !== undefined) define(out, key, node[key]);
  return out;
}

function fail(path: string, message: string): never {
  throw new CrdSchemaError(path, message);
}
