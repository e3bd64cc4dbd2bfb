/**
 * @module crd/limits
 * `withLimits`: bounds added to a schema you did not write — an embedded built-in type (`PodTemplateSpecSchema`) —
 * at the fields you name, so CEL rules over its lists stay within the apiserver's cost budget (a rule over
 * `self.spec.containers` is costed by the list's `maxItems`, which `opkit generate` checks) and a custom resource
 * cannot carry an unbounded list.
 *
 * A path is the fields from the schema's root, dot-separated: `spec.containers`; `[]` steps into a list's items
 * (`spec.containers[].env`), `*` into a map's values (`spec.nodeSelector.*`).
 *
 * Guarantees: the result is a copy along each path, the rest of the schema shared and nothing of the input changed,
 * with the same TypeScript type (`Static` is unchanged); a path that does not exist in the schema, or a bound on a
 * node of the wrong type (`maxItems` on a string), throws a `CrdSchemaError` naming the path and the fields there.
 */
import type { TSchema } from '@sinclair/typebox';
import { CrdSchemaError } from './schema.ts';

/** Bounds `withLimits` adds to a node. */
export interface Limits {
  /** The most items of a list. */
  maxItems?: number;
  /** The fewest items of a list. */
  minItems?: number;
  /** The most characters of a string. */
  maxLength?: number;
  /** The most entries of a map. */
  maxProperties?: number;
}

type Json = Record<string, unknown>;

const NEEDS: Readonly<Record<keyof Limits, string>> = {
  maxItems: 'array',
  minItems: 'array',
  maxLength: 'string',
  maxProperties: 'object',
};

/**
 * A copy of `schema` with `limits` added at each path (see the module comment), e.g.
 * `withLimits(PodTemplateSpecSchema, { 'spec.containers': { maxItems: 8 }, 'spec.containers[].env': { maxItems: 64 } })`.
 */
export function withLimits<T extends TSchema>(schema: T, limits: Readonly<Record<string, Limits>>): T {
  let out = schema as unknown as Json;
  for (const [path, bounds] of Object.entries(limits)) out = limitAt(out, steps(path), path, bounds);
  return out as unknown as T;
}

/** The steps of a path: property names, `[]` and `*`. */
function steps(path: string): string[] {
  if (path.trim() === '') throw new CrdSchemaError(path, 'the path is empty: name the fields, e.g. spec.containers');
  return path.split('.').flatMap((part) => {
    const name = part.replace(/(\[\])+$/, '');
    const lists = (part.length - name.length) / 2;
    return [...(name === '' ? [] : [name]), ...Array.from({ length: lists }, () => '[]')];
  });
}

function limitAt(node: Json, rest: readonly string[], path: string, bounds: Limits): Json {
  const [step, ...more] = rest;
  if (step === undefined) {
    for (const key of Object.keys(bounds) as (keyof Limits)[]) {
      const value = bounds[key];
      if (value === undefined) continue;
      if (!Number.isInteger(value) || value < 0)
        throw new CrdSchemaError(path, `${key} must be a non-negative integer, not ${JSON.stringify(value)}`);
      if (node.type !== NEEDS[key])
        throw new CrdSchemaError(path, `${key} bounds ${article(NEEDS[key])}, and this field is ${describe(node)}`);
    }
    return { ...node, ...bounds };
  }
  const child = childOf(node, step);
  if (child === undefined) throw new CrdSchemaError(path, missing(node, step));
  const replaced = limitAt(child.node, more, path, bounds);
  if (step === '[]') return { ...node, items: replaced };
  if (step === '*') return { ...node, additionalProperties: replaced };
  return { ...node, properties: { ...(node.properties as Json), [step]: replaced } };
}

function childOf(node: Json, step: string): { node: Json } | undefined {
  const pick = (v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? { node: v as Json } : undefined;
  if (step === '[]') return pick(node.items);
  if (step === '*') return pick(node.additionalProperties);
  const props = node.properties as Json | undefined;
  return props && Object.hasOwn(props, step) ? pick(props[step]) : undefined;
}

const article = (type: string): string => `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;

function describe(node: Json): string {
  return typeof node.type === 'string' ? article(node.type) : 'not typed';
}

function missing(node: Json, step: string): string {
  if (step === '[]') return `no list here (${describe(node)}): drop the []`;
  if (step === '*') return `no map here (${describe(node)}): drop the *`;
  const fields = Object.keys((node.properties as Json | undefined) ?? {});
  return `no field ${JSON.stringify(step)} here; its fields: ${fields.length > 0 ? fields.join(', ') : 'none'}`;
}
