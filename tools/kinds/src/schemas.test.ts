import assert from 'node:assert/strict';
import { test } from 'node:test';
import { asciiSource } from './emit.ts';
import { generateAll } from './generate.ts';
import type { OpenApiDocument, Schema } from './openapi.ts';
import type { GroupVersion } from './select.ts';

const ref = (id: string): Schema => ({ $ref: `#/components/schemas/${id}` });
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const EXT = 'io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1';
const CORE = 'io.k8s.api.core.v1';
const listOp = (kind: string, group = '', version = 'v1') => ({
  get: { 'x-kubernetes-action': 'list', 'x-kubernetes-group-version-kind': { group, version, kind } },
});

const doc: OpenApiDocument = {
  paths: { '/api/v1/pods': listOp('Pod'), '/api/v1/schemas': listOp('Schema') },
  components: {
    schemas: {
      [`${META}.ObjectMeta`]: {
        type: 'object',
        properties: {
          annotations: { type: 'object', additionalProperties: { type: 'string' } },
          creationTimestamp: ref(`${META}.Time`),
          labels: { type: 'object', additionalProperties: { type: 'string' } },
          name: { type: 'string', description: 'Name.' },
          uid: { type: 'string' },
        },
      },
      [`${META}.Time`]: { type: 'string', format: 'date-time' },
      'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
      'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { oneOf: [{ type: 'integer' }, { type: 'string' }] },
      [`${CORE}.Pod`]: {
        description: 'Pod is a collection of containers.',
        type: 'object',
        'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Pod' }],
        properties: {
          metadata: { allOf: [ref(`${META}.ObjectMeta`)], default: {} },
          spec: { allOf: [ref(`${CORE}.PodSpec`)], default: {}, description: 'The spec.' },
        },
      },
      [`${CORE}.PodSpec`]: {
        type: 'object',
        required: ['containers'],
        properties: {
          containers: {
            type: 'array',
            items: ref(`${CORE}.Container`),
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['name'],
            'x-kubernetes-patch-merge-key': 'name',
          } as Schema,
          secrets: {
            type: 'array',
            items: ref(`${CORE}.LocalRef`),
            'x-kubernetes-list-type': 'map',
            'x-kubernetes-list-map-keys': ['name'],
          },
          hostname: { type: 'string', default: '' },
          nodeSelector: { type: 'object', additionalProperties: { type: 'string', default: '' } },
          overhead: { type: 'object', additionalProperties: ref('io.k8s.apimachinery.pkg.api.resource.Quantity') },
        },
      },
      [`${CORE}.Container`]: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string', default: '' },
          port: ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'),
          protocol: { type: 'string', default: 'TCP', enum: ['TCP', 'UDP'] } as Schema,
          restarts: { type: 'integer', format: 'int32', default: 0 },
          x: { type: 'object' },
        },
      },
      [`${CORE}.LocalRef`]: { type: 'object', properties: { name: { type: 'string' } } },
      [`${CORE}.Schema`]: {
        type: 'object',
        'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Schema' }],
        properties: { metadata: ref(`${META}.ObjectMeta`), props: ref(`${EXT}.JSONSchemaProps`) },
      },
      [`${EXT}.JSONSchemaProps`]: {
        type: 'object',
        properties: { items: ref(`${EXT}.JSONSchemaProps`), type: { type: 'string' } },
      },
    },
  },
};
const GVS: readonly GroupVersion[] = [{ group: '', version: 'v1', file: 'core' }];

/** The constant `name` of the generated file `file`, as its source text. */
function constant(files: ReadonlyMap<string, string>, file: string, name: string): string {
  const text = files.get(file) ?? '';
  const line = text.split('\n').find((l) => l.startsWith(`export const ${name} = `));
  assert.ok(line, `${file} has no ${name}`);
  return line;
}

test('int-or-string, quantity, time, map lists and defaults become what a CRD accepts', () => {
  const { schemas } = generateAll(new Map([['api/v1', doc]]), 'v1.0.0', GVS);
  const files = schemas.files;
  const container = constant(files, 'core.ts', 'ContainerSchema');
  assert.match(
    container,
    /port: \{ 'x-kubernetes-int-or-string': true, anyOf: \[\{ type: "integer" \}, \{ type: "string" \}\] \}/,
  );
  assert.match(
    container,
    /protocol: \{ type: "string", default: "TCP" \}/,
    'a non-zero default kept, the enum left out',
  );
  assert.match(container, /restarts: \{ type: "integer", format: "int32" \}/, 'a zero default left out');
  assert.match(container, /name: \{ type: "string" \}/, 'a required key needs no default');
  assert.match(container, /x: \{ type: "object" \}/, 'an empty struct: an object with no fields');
  const spec = constant(files, 'core.ts', 'PodSpecSchema');
  assert.match(
    spec,
    /containers: \{ type: "array", items: ContainerSchema, 'x-kubernetes-list-type': "map", 'x-kubernetes-list-map-keys': \["name"\] \}/,
  );
  assert.match(
    spec,
    /secrets: \{ type: "array", items: LocalRefSchema, 'x-kubernetes-list-type': "atomic" \}/,
    'a key neither required nor defaulted: atomic',
  );
  assert.match(spec, /hostname: \{ type: "string" \}/);
  assert.match(
    spec,
    /overhead: \{ type: "object", additionalProperties: \{ 'x-kubernetes-int-or-string': true, anyOf: .*pattern: "\^\(\\\\\+\|-\)/,
  );
  assert.equal(spec.includes('patch-merge-key'), false);
  const pod = constant(files, 'core.ts', 'PodSchema');
  assert.match(pod, /spec: \{ \.\.\.PodSpecSchema, description: "The spec\." \}/);
  assert.match(pod, /metadata: ObjectMetaSchema/);
  assert.equal(pod.includes('default'), false, '{} defaults left out');
  const text = files.get('core.ts') ?? '';
  assert.ok(text.indexOf('export const ContainerSchema') < text.indexOf('export const PodSpecSchema'), 'used first');
  assert.match(text, /import \{ ObjectMetaSchema \} from '\.\/meta\.ts';/);
});

test('embedded ObjectMeta keeps name, namespace, labels, annotations and finalizers; recursive types get no schema', () => {
  const { schemas } = generateAll(new Map([['api/v1', doc]]), 'v1.0.0', GVS);
  const meta = constant(schemas.files, 'meta.ts', 'ObjectMetaSchema');
  assert.match(
    meta,
    /properties: \{ annotations: .*, labels: .*, name: \{ type: "string", description: "Name\." \} \}/,
  );
  assert.equal(/creationTimestamp|uid/.test(meta), false);
  assert.deepEqual(schemas.recursive, [`${CORE}.Schema`, `${EXT}.JSONSchemaProps`]);
  assert.equal((schemas.files.get('core.ts') ?? '').includes('SchemaSchema'), false);
  const check = schemas.files.get('static.test.ts') ?? '';
  assert.match(check, /Same<Static<typeof core\.PodSpecSchema>, coreKinds\.PodSpec>,/);
  assert.equal(check.includes('JSONSchemaProps'), false);
});

test('asciiSource: every non-ASCII character becomes a \\u escape that evaluates to the same string', () => {
  const text = 'const d = "the plugin’s name — “quoted” … ✓ 😀";';
  const ascii = asciiSource(text);
  assert.match(ascii, /^[\x20-\x7e]*$/, 'ASCII only');
  const value = (src: string) => new Function(`${src} return d;`)() as string;
  assert.equal(value(ascii), value(text));
});
