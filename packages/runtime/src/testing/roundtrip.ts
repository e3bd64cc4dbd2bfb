/**
 * @module @opkit/runtime/testing/roundtrip
 * Fuzzed conversion round trips for kinds with several versions, as Kubernetes' own API round-trip tests: objects are
 * generated from each version's CRD schema (so they are objects the apiserver would accept), converted to the hub
 * and back, and must come back equal.
 *
 * ```ts
 * import { test } from 'node:test';
 * import { defineKind } from '@opkit/runtime';
 * import { checkRoundTrip } from '@opkit/runtime/testing/roundtrip';
 * import { Type } from '@sinclair/typebox';
 *
 * const Spec = Type.Object({ replicas: Type.Integer() });
 * const Widgets = defineKind({
 *   group: 'example.com', kind: 'Widget', plural: 'widgets', storage: 'v1',
 *   versions: { v1alpha1: { spec: Spec }, v1: { spec: Spec } },
 *   conversions: { v1alpha1: { toHub: (w) => w, fromHub: (w) => w } },
 * });
 * test('conversions round-trip', () => checkRoundTrip(Widgets, { numRuns: 300 }));
 * ```
 *
 * Its own entry, apart from `@opkit/runtime/testing`, because it runs on fast-check, an optional peer dependency:
 * install it (`npm install -D fast-check`) to use this entry; nothing else of the runtime loads it.
 *
 * Guarantees: `arbitraryFor(schema)` generates only values valid for the structural schema's types, enums, bounds,
 * patterns, required fields and list-map keys (CEL rules and formats other than date-time are not modelled);
 * `checkRoundTrip` checks every non-storage version in both directions (spoke → hub → spoke and hub → spoke → hub)
 * and throws a `TestingError` (`RoundTripFailed`) with fast-check's report — seed, path and the smallest failing
 * object — on the first difference.
 */
import fc from 'fast-check';
import type { KubeObject } from '../client/resource.ts';
import type { VersionedKind, VersionMap } from '../crd/versions.ts';
import { UsageError } from '../errors.ts';
import { TestingError } from './errors.ts';

type Json = Record<string, unknown>;

const INT32 = 2 ** 31 - 1;

/** Values valid for a structural (CRD) schema node. */
export function arbitraryFor(schema: Json): fc.Arbitrary<unknown> {
  const base = nodeArbitrary(schema);
  return schema.nullable === true ? fc.oneof(fc.constant(null), base) : base;
}

function nodeArbitrary(s: Json): fc.Arbitrary<unknown> {
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if (s['x-kubernetes-int-or-string'] === true) {
    const str = typeof s.pattern === 'string' ? fc.stringMatching(new RegExp(s.pattern)) : fc.string({ maxLength: 8 });
    return fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), str);
  }
  switch (s.type) {
    case 'object':
      return objectArbitrary(s);
    case 'array':
      return arrayArbitrary(s);
    case 'string':
      return stringArbitrary(s);
    case 'integer': {
      const int64 = s.format === 'int64';
      const min =
        typeof s.minimum === 'number'
          ? s.minimum + (s.exclusiveMinimum === true ? 1 : 0)
          : int64
            ? -(2 ** 53) + 1
            : -INT32 - 1;
      const max =
        typeof s.maximum === 'number' ? s.maximum - (s.exclusiveMaximum === true ? 1 : 0) : int64 ? 2 ** 53 - 1 : INT32;
      return int64 ? fc.maxSafeInteger().filter((n) => n >= min && n <= max) : fc.integer({ min, max });
    }
    case 'number':
      return fc
        .double({
          noNaN: true,
          noDefaultInfinity: true,
          ...(typeof s.minimum === 'number' ? { min: s.minimum } : {}),
          ...(typeof s.maximum === 'number' ? { max: s.maximum } : {}),
        })
        .map((n) => (Object.is(n, -0) ? 0 : n));
    case 'boolean':
      return fc.boolean();
    default:
      // preserve-unknown-fields without a type: any JSON
      return fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
  }
}

function objectArbitrary(s: Json): fc.Arbitrary<unknown> {
  const properties = (s.properties ?? {}) as Record<string, Json>;
  const names = Object.keys(properties);
  if (names.length > 0) {
    const required = Array.isArray(s.required) ? (s.required as string[]) : [];
    return fc.record(Object.fromEntries(names.map((n) => [n, arbitraryFor(properties[n] as Json)])), {
      requiredKeys: required.filter((r) => names.includes(r)),
    });
  }
  if (typeof s.additionalProperties === 'object' && s.additionalProperties !== null) {
    return fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), arbitraryFor(s.additionalProperties as Json), {
      maxKeys: 3,
    });
  }
  return fc
    .dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 })
    .map((v) => JSON.parse(JSON.stringify(v)) as unknown);
}

function arrayArbitrary(s: Json): fc.Arbitrary<unknown> {
  const items = arbitraryFor((s.items ?? {}) as Json);
  const minLength = typeof s.minItems === 'number' ? s.minItems : 0;
  const maxLength = Math.min(typeof s.maxItems === 'number' ? s.maxItems : Number.MAX_SAFE_INTEGER, minLength + 4);
  const listType = s['x-kubernetes-list-type'];
  if (listType === 'map' || listType === 'set') {
    const keys = Array.isArray(s['x-kubernetes-list-map-keys']) ? (s['x-kubernetes-list-map-keys'] as string[]) : [];
    const selector =
      listType === 'map'
        ? (item: unknown) => JSON.stringify(keys.map((k) => (item as Json)[k]))
        : (item: unknown) => JSON.stringify(item);
    return fc.uniqueArray(items, { selector, minLength, maxLength });
  }
  return fc.array(items, { minLength, maxLength });
}

function stringArbitrary(s: Json): fc.Arbitrary<string> {
  const minLength = typeof s.minLength === 'number' ? s.minLength : 0;
  const maxLength = typeof s.maxLength === 'number' ? s.maxLength : minLength + 16;
  if (s.format === 'date-time') {
    return fc
      .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true })
      .map((d) => `${d.toISOString().slice(0, 19)}Z`);
  }
  if (typeof s.pattern === 'string') {
    return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length >= minLength && v.length <= maxLength);
  }
  return fc.string({ minLength, maxLength: Math.min(maxLength, minLength + 16) });
}

const DNS_LABEL = fc.stringMatching(/^[a-z]([-a-z0-9]{0,20}[a-z0-9])?$/);

/** Whole objects of one version of a kind, with generated name, labels, annotations, spec and status. */
export function arbitraryObject(kind: VersionedKind<VersionMap, string>, version: string): fc.Arbitrary<KubeObject> {
  const crd = kind.crd({ conversion: { url: 'https://127.0.0.1/convert' } });
  const entry = crd.spec.versions.find((v) => v.name === version);
  if (!entry) throw new UsageError('InvalidArgument', `${kind.definition.kind} has no version ${version}`);
  const root = (entry.schema?.openAPIV3Schema ?? {}) as Json;
  const props = (root.properties ?? {}) as Record<string, Json>;
  const meta = fc.record(
    {
      name: DNS_LABEL,
      labels: fc.dictionary(DNS_LABEL, DNS_LABEL, { maxKeys: 2 }),
      annotations: fc.dictionary(DNS_LABEL, fc.string({ maxLength: 10 }), { maxKeys: 2 }),
    },
    { requiredKeys: ['name'] },
  );
  return fc
    .record(
      {
        metadata: kind.definition.scope === 'Cluster' ? meta : meta.map((m) => ({ ...m, namespace: 'default' })),
        spec: props.spec ? arbitraryFor(props.spec) : fc.constant({}),
        status: props.status ? arbitraryFor(props.status) : fc.constant(undefined),
      },
      { requiredKeys: ['metadata', 'spec'] },
    )
    .map(
      (o) =>
        JSON.parse(
          JSON.stringify({ apiVersion: `${kind.definition.group}/${version}`, kind: kind.definition.kind, ...o }),
        ) as KubeObject,
    );
}

/** Options of `checkRoundTrip`. */
export interface RoundTripOptions {
  /** Objects per version and direction (default 200). */
  readonly numRuns?: number;
  /** The random seed, to replay a failure (fast-check's `seed`; a failure prints it). */
  readonly seed?: number;
  /** Also hub → spoke → hub (default true): a lossy spoke must keep what it cannot hold, e.g. in annotations. */
  readonly fromHub?: boolean;
}

/** Checks that every version converts to the hub and back unchanged (and the hub to every version and back). */
export function checkRoundTrip(kind: VersionedKind<VersionMap, string>, options: RoundTripOptions = {}): void {
  const hub = kind.storageVersion;
  const hubVersion = `${kind.definition.group}/${hub}`;
  const params = { numRuns: options.numRuns ?? 200, ...(options.seed !== undefined ? { seed: options.seed } : {}) };
  for (const version of Object.keys(kind.versions)) {
    if (version === hub) continue;
    const spoke = `${kind.definition.group}/${version}`;
    run(
      fc.property(arbitraryObject(kind, version), (obj) => {
        const back = kind.convert(kind.convert(obj, hubVersion), spoke);
        assertEqual(back, obj, `${version} → ${hub} → ${version}`);
      }),
      params,
    );
    if (options.fromHub === false) continue;
    run(
      fc.property(arbitraryObject(kind, hub), (obj) => {
        const back = kind.convert(kind.convert(obj, spoke), hubVersion);
        assertEqual(back, obj, `${hub} → ${version} → ${hub}`);
      }),
      params,
    );
  }
}

/** Runs a property; a failure throws the round trip's own message first, then fast-check's report (seed, path). */
function run(property: fc.IProperty<[KubeObject]>, params: fc.Parameters<[KubeObject]>): void {
  try {
    fc.assert(property, params);
  } catch (err) {
    const cause = (err as Error).cause;
    const first = cause instanceof Error ? `${cause.message}\n` : '';
    throw new TestingError('RoundTripFailed', `${first}${(err as Error).message}`, { cause: err });
  }
}

function assertEqual(actual: unknown, expected: unknown, what: string): void {
  const a = canonical(actual);
  const e = canonical(expected);
  if (a !== e) throw new TestingError('RoundTripFailed', `${what} changed the object:\n  before: ${e}\n  after:  ${a}`);
}

/** JSON with object keys sorted, so that field order does not count. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value as Json).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : value,
  );
}
