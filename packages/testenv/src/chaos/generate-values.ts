/**
 * @module chaos/generate-values
 * The values chaos/generate tries at a site, as Acto (SOSP '23) chooses them from the schema: another enum value, a
 * boolean toggled, an integer or number within `minimum`/`maximum` (boundaries included, kept small: at most
 * `minimum + 5` unless the maximum itself is that close, so a `replicas` field never asks for a thousand pods), a
 * string derived from the current one (`1.36` → `1.37`, `web` → `web-2`) or from a small pool, each kept to
 * `pattern`, `minLength`, `maxLength` and well-known `format`s; an array or map with an item added or removed (within
 * `minItems`/`maxItems`, `minProperties`/`maxProperties`); an optional property added (objects with their required
 * fields) or removed.
 *
 * Guarantees: the same random source, the same values in the same order; a value is never the current one. These are
 * candidates: the schema's rules are applied where that is easy, and the offline validator is the judge of the rest
 * (a pattern JavaScript cannot compile leaves the property without string values). Caveat: `undefined` in a list of
 * candidates means "remove the property".
 */
import { canonical, isObject, type Json, type Schema, type Site, typed } from './generate-schema.ts';

/** A source of floats in [0, 1): `seeded(seed)` of chaos/plan. */
export type Random = () => number;

/** At most this many values are proposed for a site. */
const LIMIT = 8;
/** Integers without a maximum close by go at most this far above the minimum (0 when there is none). */
const SMALL_RANGE = 5;
/** A maximum at most this far above the minimum is a boundary worth trying. */
const SMALL_MAXIMUM = 10;
/** How deep an added object is built. */
const MAX_DEPTH = 6;

const POOL = ['example', 'example-2', 'demo', 'v2', 'a', 'b1', '1.0', 'Example', 'EXAMPLE', 'example.com', 'value_1'];
const FORMATS: Readonly<Record<string, readonly string[]>> = {
  'date-time': ['2030-01-01T00:00:00Z', '2030-06-15T12:30:00Z'],
  date: ['2030-01-01', '2030-06-15'],
  duration: ['30s', '5m', '1h'],
  hostname: ['example.com', 'host-2.example.com'],
  ipv4: ['10.0.0.1', '192.168.1.10'],
  ipv6: ['fd00::1', '2001:db8::2'],
  cidr: ['10.0.0.0/24', '192.168.0.0/16'],
  uri: ['https://example.com/', 'https://example.com/v2'],
  email: ['user@example.com'],
  uuid: ['3f2504e0-4f89-41d3-9a0c-0305e82c3301'],
  byte: ['aGVsbG8=', 'Y2hhb3M='],
  mac: ['02:00:00:00:00:01'],
};
/** int-or-string values by the property's name: CPU, bytes, or anything (a count, a percentage). */
const QUANTITIES: readonly (readonly [RegExp, readonly unknown[]])[] = [
  [/cpu/i, ['100m', '250m', '500m', '1', '2', 1]],
  [/memory|storage|size|capacity/i, ['64Mi', '128Mi', '256Mi', '1Gi', '2Gi']],
  [/./, [1, 2, '1', '100m', '500m', '128Mi', '1Gi', '25%', '50%']],
];
const MAP_KEYS = ['example', 'app.example.com/role', 'tier', 'key-2'];

/** `list` in an order `random` chose (a copy). */
export function shuffle<T>(list: readonly T[], random: Random): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const unique = (list: readonly unknown[]): unknown[] => {
  const seen = new Set<string>();
  return list.filter((v) => {
    const key = canonical(v);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
};

/** The values to try at `site` (see the module comment), at most `LIMIT`, `undefined` for a removal. */
export function candidates(site: Site, random: Random): unknown[] {
  const { schema, current } = site;
  let values: unknown[];
  if (current === undefined) values = fresh(schema, random, 0, nameOf(site));
  else if (Array.isArray(current)) values = arrays(schema, current, random, nameOf(site));
  else if (isObject(current))
    values = schema.properties === undefined ? maps(schema, current, random, nameOf(site)) : [];
  else values = scalars(schema, current, random, nameOf(site));
  values = unique(values)
    .filter((v) => v !== undefined && canonical(v) !== canonical(current))
    .slice(0, LIMIT - 1);
  if (site.optional && current !== undefined) values.splice(Math.floor(random() * (values.length + 1)), 0, undefined);
  return values;
}

/** The name of the property (of the array or map, for an item or entry): a hint to the kind of quantity. */
const nameOf = (site: Site): string => String(site.path.findLast((p) => typeof p === 'string') ?? '');

/** A value of `schema` to start from: its default, else a fresh one; undefined when none can be made. */
export function build(schema: Schema, random: Random, depth = 0, name = ''): unknown {
  if (schema.default !== undefined) return structuredClone(schema.default);
  return fresh(schema, random, depth, name)[0];
}

/** A few new values of `schema`, for a property that is not set or an item to add. */
function fresh(schema: Schema, random: Random, depth: number, name: string): unknown[] {
  if (depth > MAX_DEPTH || !typed(schema)) return [];
  if (schema.enum === undefined && schema['x-kubernetes-int-or-string'] !== true) {
    if (schema.type === 'object' && schema.properties !== undefined)
      return [object(schema, random, depth), object(schema, random, depth)].filter((v) => v !== undefined);
    if (schema.type === 'object') return maps(schema, {}, random, name);
    if (schema.type === 'array') {
      const item = schema.items === undefined ? undefined : build(schema.items, random, depth + 1, name);
      return item === undefined ? [] : [Array.from({ length: Math.max(1, schema.minItems ?? 0) }, () => item)];
    }
  }
  return scalars(schema, undefined, random, name);
}

/** An object of `schema` with its required properties, or one optional property when none is required. */
function object(schema: Schema, random: Random, depth: number): Json | undefined {
  const props = schema.properties ?? {};
  const out: Json = {};
  for (const name of schema.required ?? []) {
    const child = props[name];
    const v = child === undefined ? undefined : build(child, random, depth + 1, name);
    if (v === undefined) return undefined;
    out[name] = v;
  }
  if (Object.keys(out).length > 0) return out;
  for (const name of shuffle(Object.keys(props), random)) {
    const child = props[name];
    const v = child === undefined ? undefined : build(child, random, depth + 1, name);
    if (v !== undefined) return { [name]: v };
  }
  return out;
}

/** Copies of `current` with an item added (from the item schema) or one removed. */
function arrays(schema: Schema, current: readonly unknown[], random: Random, name: string): unknown[] {
  const out: unknown[] = [];
  if (schema.items !== undefined && current.length < (schema.maxItems ?? Number.POSITIVE_INFINITY))
    for (const item of fresh(schema.items, random, 1, name).slice(0, 3)) out.push([...current, item]);
  if (current.length > (schema.minItems ?? 0))
    for (const i of shuffle([...current.keys()], random).slice(0, 2)) out.push(current.filter((_, j) => j !== i));
  return shuffle(out, random);
}

/** Copies of the map `current` with an entry added or one removed. */
function maps(schema: Schema, current: Json, random: Random, name: string): unknown[] {
  const child = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
  const keys = Object.keys(current);
  const out: unknown[] = [];
  if (child !== undefined && keys.length < (schema.maxProperties ?? Number.POSITIVE_INFINITY))
    for (const key of shuffle(MAP_KEYS, random)
      .filter((k) => !(k in current))
      .slice(0, 2)) {
      const v = build(child, random, 1, name);
      if (v !== undefined) out.push({ ...current, [key]: v });
    }
  if (keys.length > (schema.minProperties ?? 0))
    for (const key of shuffle(keys, random).slice(0, 2))
      out.push(Object.fromEntries(keys.filter((k) => k !== key).map((k) => [k, current[k]])));
  return shuffle(out, random);
}

/** Other scalar values of `schema` than `current` (any value when it is undefined). */
function scalars(schema: Schema, current: unknown, random: Random, name = ''): unknown[] {
  if (schema.enum !== undefined) return shuffle(schema.enum, random);
  if (schema['x-kubernetes-int-or-string'] === true) return intOrString(schema, current, random, name);
  switch (schema.type) {
    case 'boolean':
      return typeof current === 'boolean' ? [!current] : shuffle([true, false], random);
    case 'integer':
      return integers(schema, current, random);
    case 'number':
      return numbers(schema, current, random);
    case 'string':
      return strings(schema, current, random);
    default:
      return [];
  }
}

/** `minimum` (or 0) and `maximum` (or infinity), exclusive bounds moved in by `step`. */
function bounds(schema: Schema, step: number): [number, number] {
  const lo = schema.minimum === undefined ? 0 : schema.minimum + (schema.exclusiveMinimum === true ? step : 0);
  const hi =
    schema.maximum === undefined
      ? Number.POSITIVE_INFINITY
      : schema.maximum - (schema.exclusiveMaximum === true ? step : 0);
  return [lo, hi];
}

function integers(schema: Schema, current: unknown, random: Random): number[] {
  const [min, max] = bounds(schema, 1);
  const lo = Math.ceil(min);
  const hi = Math.floor(max);
  const values = new Set<number>();
  for (let v = lo; v <= Math.min(hi, lo + SMALL_RANGE); v++) values.add(v);
  if (hi <= lo + SMALL_MAXIMUM) values.add(hi);
  if (typeof current === 'number') for (const v of [current - 1, current + 1]) if (v >= lo && v <= hi) values.add(v);
  const step = schema.multipleOf;
  return shuffle(
    [...values].filter((v) => v !== current && (step === undefined || v % step === 0)),
    random,
  );
}

function numbers(schema: Schema, current: unknown, random: Random): number[] {
  const [lo, hi] = bounds(schema, 0.5);
  const near = typeof current === 'number' ? [current - 0.5, current + 0.5] : [];
  const values = [lo, lo + 0.5, lo + 1, lo + 2.5, lo + SMALL_RANGE, ...near, ...(hi <= lo + SMALL_MAXIMUM ? [hi] : [])];
  const step = schema.multipleOf;
  return shuffle(
    [...new Set(values)].filter(
      (v) => v >= lo && v <= hi && v !== current && (step === undefined || Number.isInteger(v / step)),
    ),
    random,
  );
}

/** Whether a string fits `pattern`, `minLength` and `maxLength`; undefined when the pattern is not JavaScript's. */
function fits(schema: Schema): ((v: string) => boolean) | undefined {
  let re: RegExp | undefined;
  try {
    re = schema.pattern === undefined ? undefined : new RegExp(schema.pattern, 'u');
  } catch {
    return undefined;
  }
  const [min, max] = [schema.minLength ?? 0, schema.maxLength ?? Number.POSITIVE_INFINITY];
  return (v) => [...v].length >= min && [...v].length <= max && (re === undefined || re.test(v));
}

/** Strings like `current`: its last number one up or down, a suffix added. */
function derived(current: string): string[] {
  const number = /(\d+)(?!.*\d)/.exec(current);
  const bumped =
    number === null
      ? []
      : [1, -1]
          .map((d) => Number(number[1]) + d)
          .filter((n) => n >= 0)
          .map(
            (n) => current.slice(0, number.index) + String(n) + current.slice(number.index + (number[1] ?? '').length),
          );
  return current === '' ? bumped : [...bumped, `${current}-2`];
}

function strings(schema: Schema, current: unknown, random: Random): string[] {
  const ok = fits(schema);
  if (ok === undefined) return [];
  const pool = FORMATS[schema.format ?? ''] ?? POOL;
  const min = schema.minLength ?? 0;
  const padded = min > 1 ? ['a'.repeat(min), 'example'.padEnd(min, '0')] : [];
  const own = typeof current === 'string' && schema.format === undefined ? derived(current) : [];
  return [...new Set([...own, ...shuffle(pool, random), ...padded])].filter((v) => v !== current && ok(v));
}

/** For int-or-string (a quantity, a count or a percentage): `current` scaled, then small ones. */
function intOrString(schema: Schema, current: unknown, random: Random, name: string): unknown[] {
  const ok = fits(schema) ?? (() => false);
  const scaled: unknown[] = [];
  if (typeof current === 'number') scaled.push(current + 1, current * 2, current - 1);
  const m = typeof current === 'string' ? /^(\d+(?:\.\d+)?)([a-zA-Z%]*)$/.exec(current) : null;
  if (m !== null)
    for (const n of [Number(m[1]) * 2, Number(m[1]) + 1, Number(m[1]) / 2]) scaled.push(`${n}${m[2] ?? ''}`);
  const pool = QUANTITIES.find(([hint]) => hint.test(name))?.[1] ?? [];
  return [...shuffle(scaled, random), ...shuffle(pool, random)].filter(
    (v) => canonical(v) !== canonical(current) && (typeof v === 'number' ? v >= 0 : typeof v === 'string' && ok(v)),
  );
}
