/**
 * @module tools/kinds/types
 * A schema of Kubernetes' OpenAPI as a TypeScript type in JSON form: what the API sends, not what a Go client
 * decodes. Timestamps (`Time`, `MicroTime`) are strings, an int-or-string is `number | string`, a quantity is
 * `string | number`, an embedded object (`RawExtension`) or a managed-fields set is a JSON object, arbitrary JSON
 * (`apiextensions.JSON`, `x-kubernetes-preserve-unknown-fields`) is `unknown`, and a map is a `Record`.
 *
 * Guarantees: every `$ref` to a generated definition is written as its TypeScript name and reported through `use`, so
 * the caller can import it; a schema with no type at all is `unknown`, never `any`.
 */
import type { Schema } from './openapi.ts';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const EXT = 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1';

/** Definitions written inline rather than named: JSON forms that TypeScript says better in a few words. */
const INLINE: Readonly<Record<string, string>> = {
  [`${META}.Time`]: 'string',
  [`${META}.MicroTime`]: 'string',
  [`${META}.FieldsV1`]: 'Record<string, unknown>',
  'io.k8s.apimachinery.pkg.api.resource.Quantity': 'string | number',
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': 'number | string',
  'io.k8s.apimachinery.pkg.runtime.RawExtension': 'Record<string, unknown>',
  [`${EXT}.JSON`]: 'unknown',
};

/** The few untyped definitions that stand for a union of others (apiextensions' JSON Schema). */
const UNIONS: Readonly<Record<string, (props: string) => string>> = {
  [`${EXT}.JSONSchemaPropsOrArray`]: (p) => `${p} | ${p}[]`,
  [`${EXT}.JSONSchemaPropsOrBool`]: (p) => `${p} | boolean`,
  [`${EXT}.JSONSchemaPropsOrStringArray`]: (p) => `${p} | string[]`,
};

/** The definition id a `$ref` names: `#/components/schemas/<id>` → `<id>`. */
export function refId(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

/** The one `$ref` a property schema points to, directly or as the single member of `allOf`. */
export function refOf(schema: Schema): string | undefined {
  if (schema.$ref) return refId(schema.$ref);
  const only = schema.allOf?.length === 1 ? schema.allOf[0] : undefined;
  return only?.$ref ? refId(only.$ref) : undefined;
}

/** Whether a definition is written inline (no interface of its own). */
export function isInline(id: string): boolean {
  return id in INLINE || id in UNIONS;
}

/** Resolves a generated definition id to its TypeScript name (and records that the current file uses it). */
export type UseName = (id: string) => string;

/** The TypeScript type of `schema`. */
export function typeOf(schema: Schema, use: UseName): string {
  const ref = refOf(schema);
  if (ref !== undefined) return refType(ref, use);
  if (schema['x-kubernetes-int-or-string']) return 'number | string';
  if (schema['x-kubernetes-preserve-unknown-fields'] && !schema.properties) return 'unknown';
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = schema.items ? typeOf(schema.items, use) : 'unknown';
      return /[|&]/.test(item) ? `(${item})[]` : `${item}[]`;
    }
    case 'object':
      return objectType(schema, use);
    default:
      return 'unknown';
  }
}

function refType(id: string, use: UseName): string {
  const inline = INLINE[id];
  if (inline !== undefined) return inline;
  const union = UNIONS[id];
  if (union !== undefined) return union(use(`${EXT}.JSONSchemaProps`));
  return use(id);
}

function objectType(schema: Schema, use: UseName): string {
  const extra = schema.additionalProperties;
  if (schema.properties === undefined) {
    if (typeof extra === 'object') return `Record<string, ${typeOf(extra, use)}>`;
    return 'Record<string, unknown>';
  }
  const required = new Set(schema.required ?? []);
  const fields = Object.entries(schema.properties).map(
    ([name, s]) => `${propertyKey(name)}${required.has(name) ? '' : '?'}: ${typeOf(s, use)}`,
  );
  return `{ ${fields.join('; ')} }`;
}

/** A property name as TypeScript writes it: bare when it is an identifier, else quoted. */
export function propertyKey(name: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(name) ? name : `'${name.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
