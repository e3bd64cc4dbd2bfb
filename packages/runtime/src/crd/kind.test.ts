import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import { type CustomKind, defineKind, type KindDefinition, type KindObject } from './kind.ts';
import { CrdSchemaError } from './schema.ts';

const quantity = Type.Unsafe<number | string>({
  'x-kubernetes-int-or-string': true,
  anyOf: [{ type: 'integer' }, { type: 'string' }],
  pattern:
    '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)))?)?$',
});

const Spec = Type.Object({
  replicas: Type.Integer({ format: 'int32', minimum: 0, default: 1, description: 'Desired number of pods.' }),
  image: Type.String({ default: 'busybox' }),
  command: Type.Optional(Type.Array(Type.String())),
  args: Type.Optional(Type.Array(Type.String())),
  env: Type.Optional(
    Type.Array(
      Type.Object(
        { name: Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), value: Type.Optional(Type.String()) },
        { additionalProperties: false },
      ),
      { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] },
    ),
  ),
  resources: Type.Optional(
    Type.Object({
      limits: Type.Optional(Type.Record(Type.String(), quantity)),
      requests: Type.Optional(Type.Record(Type.String(), quantity)),
    }),
  ),
});

const Condition = Type.Object({
  type: Type.String(),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.Optional(Type.String()),
  message: Type.Optional(Type.String()),
  lastTransitionTime: Type.Optional(Type.String({ format: 'date-time' })),
});

const Status = Type.Object({
  replicas: Type.Optional(Type.Integer({ format: 'int32' })),
  selector: Type.Optional(Type.String()),
  podNames: Type.Optional(Type.Array(Type.String())),
  conditions: Type.Optional(
    Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] }),
  ),
});

const definition: KindDefinition<typeof Spec, typeof Status> = {
  group: 'apps.example.com',
  version: 'v1alpha1',
  kind: 'AppService',
  plural: 'appservices',
  shortNames: ['appsvc'],
  categories: ['all'],
  description: 'AppService runs a set of pods.',
  spec: Spec,
  status: Status,
  subresources: {
    status: true,
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  },
  printerColumns: [
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Image', type: 'string', jsonPath: '.spec.image', priority: 1, description: 'Container image.' },
  ],
  validations: [{ rule: 'self.replicas <= 100', message: 'at most 100 replicas', fieldPath: '.replicas' }],
};

const AppService = defineKind(definition);

type Json = Record<string, unknown>;

function at(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const key of path) {
    assert.ok(typeof current === 'object' && current !== null, `no ${String(key)} in ${JSON.stringify(current)}`);
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/** Every key/value of a JSON tree, with its path. */
function walk(value: unknown, visit: (path: string, key: string, value: unknown) => void, path = ''): void {
  if (Array.isArray(value)) {
    value.forEach((v, i) => {
      visit(path, String(i), v);
      walk(v, visit, `${path}[${i}]`);
    });
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      visit(path, k, v);
      walk(v, visit, `${path}.${k}`);
    }
  }
}

function rejects(def: KindDefinition<TSchema, TSchema>, path: string, message: RegExp): void {
  assert.throws(
    () => defineKind(def),
    (e: unknown) => {
      assert.ok(e instanceof CrdSchemaError, `expected a CrdSchemaError, got ${String(e)}`);
      assert.equal(e.path, path);
      assert.match(e.message, message);
      return true;
    },
  );
}

test('the kind is its resource type', () => {
  const r = AppService;
  assert.equal(r.group, 'apps.example.com');
  assert.equal(r.version, 'v1alpha1');
  assert.equal(r.kind, 'AppService');
  assert.equal(r.plural, 'appservices');
  assert.equal(r.namespaced, true);
  assert.equal(r.apiVersion, 'apps.example.com/v1alpha1');
  const cluster = defineKind({ ...definition, kind: 'Tenant', plural: 'tenants', scope: 'Cluster', shortNames: [] });
  assert.equal(cluster.namespaced, false);
  assert.equal(at(cluster.crd(), 'spec', 'scope'), 'Cluster');
  assert.equal(AppService.definition.singular, 'appservice');
  assert.equal(AppService.definition.listKind, 'AppServiceList');
  assert.equal(AppService.definition.scope, 'Namespaced');
});

test('the object type follows the schemas', () => {
  const obj: KindObject<typeof Spec, typeof Status> = {
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      replicas: 2,
      image: 'nginx',
      env: [{ name: 'A', value: '1' }],
      resources: { limits: { cpu: '500m', memory: 1024 } },
    },
    status: { replicas: 2, conditions: [{ type: 'Ready', status: 'True' }] },
  };
  const kind: CustomKind<KindObject<typeof Spec, typeof Status>> = AppService;
  assert.equal(kind.kind, 'AppService');
  assert.equal(obj.spec.env?.[0]?.name, 'A');
});

test('the CRD manifest: names, scope, one served+storage version, subresources, printer columns', () => {
  const crd = AppService.crd();
  assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
  assert.equal(crd.kind, 'CustomResourceDefinition');
  assert.deepEqual(crd.metadata, { name: 'appservices.apps.example.com' });
  assert.equal(crd.spec.group, 'apps.example.com');
  assert.deepEqual(crd.spec.names, {
    kind: 'AppService',
    listKind: 'AppServiceList',
    plural: 'appservices',
    singular: 'appservice',
    shortNames: ['appsvc'],
    categories: ['all'],
  });
  assert.equal(crd.spec.scope, 'Namespaced');
  assert.equal(crd.spec.versions.length, 1);
  const [version] = crd.spec.versions;
  assert.ok(version);
  assert.equal(version.name, 'v1alpha1');
  assert.equal(version.served, true);
  assert.equal(version.storage, true);
  assert.deepEqual(version.subresources, {
    status: {},
    scale: {
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    },
  });
  assert.deepEqual(version.additionalPrinterColumns, [
    { name: 'Replicas', type: 'integer', jsonPath: '.spec.replicas' },
    { name: 'Image', type: 'string', jsonPath: '.spec.image', description: 'Container image.', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ]);
});

test('the CRD schema: root, spec with CEL rule, list-map env, int-or-string quantities, status', () => {
  const root = at(AppService.crd(), 'spec', 'versions', 0, 'schema', 'openAPIV3Schema') as Json;
  assert.equal(root.type, 'object');
  assert.equal(root.description, 'AppService runs a set of pods.');
  assert.deepEqual(root.required, ['spec'], 'spec has required members');
  assert.deepEqual(Object.keys(root.properties as Json), ['apiVersion', 'kind', 'metadata', 'spec', 'status']);
  assert.deepEqual(at(root, 'properties', 'apiVersion'), { type: 'string' });
  assert.deepEqual(at(root, 'properties', 'kind'), { type: 'string' });
  assert.deepEqual(at(root, 'properties', 'metadata'), { type: 'object' });

  const spec = at(root, 'properties', 'spec') as Json;
  assert.equal(spec.type, 'object');
  assert.deepEqual(spec.required, ['replicas', 'image']);
  assert.deepEqual(spec['x-kubernetes-validations'], [
    { rule: 'self.replicas <= 100', message: 'at most 100 replicas', fieldPath: '.replicas' },
  ]);
  assert.deepEqual(at(spec, 'properties', 'replicas'), {
    type: 'integer',
    default: 1,
    description: 'Desired number of pods.',
    format: 'int32',
    minimum: 0,
  });
  assert.deepEqual(at(spec, 'properties', 'image'), { type: 'string', default: 'busybox' });
  assert.deepEqual(at(spec, 'properties', 'command'), { type: 'array', items: { type: 'string' } });
  assert.deepEqual(at(spec, 'properties', 'args'), { type: 'array', items: { type: 'string' } });
  assert.deepEqual(at(spec, 'properties', 'env'), {
    type: 'array',
    items: {
      type: 'object',
      properties: { name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }, value: { type: 'string' } },
      required: ['name'],
    },
    'x-kubernetes-list-map-keys': ['name'],
    'x-kubernetes-list-type': 'map',
  });
  const limits = at(spec, 'properties', 'resources', 'properties', 'limits') as Json;
  assert.equal(limits.type, 'object');
  assert.deepEqual(Object.keys(limits.additionalProperties as Json), [
    'anyOf',
    'pattern',
    'x-kubernetes-int-or-string',
  ]);
  assert.equal(at(limits, 'additionalProperties', 'x-kubernetes-int-or-string'), true);
  assert.deepEqual(at(limits, 'additionalProperties', 'anyOf'), [{ type: 'integer' }, { type: 'string' }]);

  const status = at(root, 'properties', 'status') as Json;
  assert.equal(status.type, 'object');
  assert.equal(status.required, undefined);
  assert.deepEqual(Object.keys(status.properties as Json), ['replicas', 'selector', 'podNames', 'conditions']);
  assert.deepEqual(at(status, 'properties', 'conditions', 'items', 'properties', 'status'), {
    type: 'string',
    enum: ['True', 'False', 'Unknown'],
  });
  assert.deepEqual(at(status, 'properties', 'conditions', 'items', 'required'), ['type', 'status']);
});

test('the manifest is clean: no additionalProperties: false, $id, symbols or undefined anywhere', () => {
  const crd = AppService.crd();
  const seen: string[] = [];
  walk(crd, (path, key, value) => {
    assert.notEqual(value, undefined, `${path}.${key} is undefined`);
    assert.ok(!(key === 'additionalProperties' && value === false), `${path}: additionalProperties: false`);
    assert.notEqual(key, '$id', `${path}: $id`);
    assert.notEqual(key, '$schema', `${path}: $schema`);
    assert.notEqual(key, 'patternProperties', `${path}: patternProperties`);
    assert.notEqual(key, 'const', `${path}: const`);
    if (typeof value === 'object' && value !== null) {
      assert.equal(Object.getOwnPropertySymbols(value).length, 0, `${path}.${key} has symbol keys`);
    }
    seen.push(key);
  });
  assert.ok(seen.length > 100);
  assert.deepEqual(JSON.parse(JSON.stringify(crd)), crd, 'survives a JSON round trip unchanged');
});

test('crd() is deterministic and returns a fresh copy each time', () => {
  const a = AppService.crd();
  const b = AppService.crd();
  assert.notEqual(a, b);
  assert.equal(JSON.stringify(a), JSON.stringify(b));
  assert.equal(JSON.stringify(defineKind(definition).crd()), JSON.stringify(a), 'same definition, same bytes');
  a.spec.names.kind = 'Mutated';
  assert.equal(AppService.crd().spec.names.kind, 'AppService');
});

test('minimal kind: defaults, no status, no subresources, optional-only spec, existing Age column kept', () => {
  const Minimal = defineKind({
    group: 'example.io',
    version: 'v1',
    kind: 'Widget',
    plural: 'widgets',
    spec: Type.Object({ size: Type.Optional(Type.Integer()) }),
    printerColumns: [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', priority: 1 }],
  });
  const crd = Minimal.crd();
  assert.deepEqual(crd.spec.names, { kind: 'Widget', listKind: 'WidgetList', plural: 'widgets', singular: 'widget' });
  assert.equal(crd.spec.scope, 'Namespaced');
  const [version] = crd.spec.versions;
  assert.ok(version);
  assert.equal('subresources' in version, false);
  assert.deepEqual(version.additionalPrinterColumns, [
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', priority: 1 },
  ]);
  const root = version.schema?.openAPIV3Schema as Json;
  assert.equal('required' in root, false, 'spec has no required members');
  assert.equal('description' in root, false);
  assert.deepEqual(Object.keys(root.properties as Json), ['apiVersion', 'kind', 'metadata', 'spec']);
});

test('spec validations are appended to rules already on the spec schema', () => {
  const spec = Type.Object(
    { a: Type.Integer(), b: Type.Integer() },
    { 'x-kubernetes-validations': [{ rule: 'self.a >= 0' }] },
  );
  const kind = defineKind({
    ...minimal(),
    spec,
    validations: [{ rule: 'self.a <= self.b', reason: 'FieldValueInvalid' }],
  });
  const rules = at(kind.crd(), 'spec', 'versions', 0, 'schema', 'openAPIV3Schema', 'properties', 'spec');
  assert.deepEqual(at(rules, 'x-kubernetes-validations'), [
    { rule: 'self.a >= 0' },
    { rule: 'self.a <= self.b', reason: 'FieldValueInvalid' },
  ]);
  assert.deepEqual(spec['x-kubernetes-validations'], [{ rule: 'self.a >= 0' }], 'the schema is not mutated');
});

test('a rule on the whole object whose fieldPath is .metadata.name: the CRD declares metadata.name, as it must', () => {
  const root = (def: Partial<KindDefinition<TSchema, TSchema>>) =>
    at(defineKind({ ...minimal(), ...def }).crd(), 'spec', 'versions', 0, 'schema', 'openAPIV3Schema');
  const rule = { rule: 'self.metadata.name.size() <= 20', message: 'at most 20 characters' };
  assert.deepEqual(at(root({ objectValidations: [rule] }), 'properties', 'metadata'), { type: 'object' });
  assert.deepEqual(at(root({}), 'properties', 'metadata'), { type: 'object' });
  assert.deepEqual(
    at(root({ objectValidations: [{ ...rule, fieldPath: '.metadata.name' }] }), 'properties', 'metadata'),
    { type: 'object', properties: { name: { type: 'string' } } },
  );
  assert.deepEqual(
    at(
      root({
        objectValidations: [
          { rule: 'has(self.metadata.generateName)', fieldPath: '.metadata.generateName' },
          { ...rule, fieldPath: '.metadata.name' },
        ],
      }),
      'properties',
      'metadata',
    ),
    { type: 'object', properties: { name: { type: 'string' }, generateName: { type: 'string' } } },
  );
});

function minimal(): KindDefinition<TSchema, TSchema> {
  return { group: 'example.io', version: 'v1', kind: 'Widget', plural: 'widgets', spec: Type.Object({}) };
}

test('definition errors name the bad field', () => {
  rejects({ ...minimal(), group: 'example' }, 'group', /DNS subdomain with at least one dot/);
  rejects({ ...minimal(), group: 'Example.IO' }, 'group', /DNS subdomain/);
  rejects({ ...minimal(), version: '1.0' }, 'version', /v1, v1alpha1 or v2beta3/);
  rejects({ ...minimal(), version: 'v1gamma1' }, 'version', /v1alpha1/);
  rejects({ ...minimal(), kind: 'widget' }, 'kind', /UpperCamelCase/);
  rejects({ ...minimal(), plural: 'Widgets' }, 'plural', /lower-case DNS label/);
  rejects({ ...minimal(), singular: 'widgets', plural: 'widgets' }, 'singular', /differ from the plural/);
  rejects({ ...minimal(), listKind: 'Widget' }, 'listKind', /differ from the kind/);
  rejects({ ...minimal(), shortNames: ['ok', 'Not_OK'] }, 'shortNames[1]', /DNS label/);
  rejects({ ...minimal(), categories: ['all', ''] }, 'categories[1]', /DNS label/);
  rejects({ ...minimal(), scope: 'Global' as 'Cluster' }, 'scope', /Namespaced or Cluster/);
  rejects(
    { ...minimal(), printerColumns: [{ name: 'X', type: 'float' as 'number', jsonPath: '.spec.x' }] },
    'printerColumns[0].type',
    /must be one of/,
  );
  rejects(
    { ...minimal(), printerColumns: [{ name: 'X', type: 'string', jsonPath: 'spec.x' }] },
    'printerColumns[0].jsonPath',
    /starting with "."/,
  );
  rejects({ ...minimal(), spec: Type.String() }, 'spec', /must be an object schema/);
  rejects({ ...minimal(), spec: Type.Object({ at: Type.Date() }) }, 'spec.at', /unsupported type "Date"/);
  rejects({ ...minimal(), subresources: { status: true } }, 'subresources.status', /needs a status schema/);
  rejects(
    { ...minimal(), validations: [{ rule: '' }] },
    'spec.x-kubernetes-validations[0]',
    /rule must be a non-empty CEL expression/,
  );
});

test('scale paths must point into spec/status at fields of the right type', () => {
  const base = (scale: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string }) => ({
    ...definition,
    subresources: { status: true, scale },
  });
  rejects(
    base({ specReplicasPath: 'spec.replicas', statusReplicasPath: '.status.replicas' }),
    'subresources.scale.specReplicasPath',
    /simple path under \.spec\./,
  );
  rejects(
    base({ specReplicasPath: '.status.replicas', statusReplicasPath: '.status.replicas' }),
    'subresources.scale.specReplicasPath',
    /under \.spec\./,
  );
  rejects(
    base({ specReplicasPath: '.spec.replicas', statusReplicasPath: '.spec.replicas' }),
    'subresources.scale.statusReplicasPath',
    /under \.status\./,
  );
  rejects(
    base({ specReplicasPath: '.spec.size', statusReplicasPath: '.status.replicas' }),
    'subresources.scale.specReplicasPath',
    /not a field of the spec schema/,
  );
  rejects(
    base({ specReplicasPath: '.spec.image', statusReplicasPath: '.status.replicas' }),
    'subresources.scale.specReplicasPath',
    /must be of type integer, not string/,
  );
  rejects(
    base({
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.metadata.x',
    }),
    'subresources.scale.labelSelectorPath',
    /under \.status\. or \.spec\./,
  );
});
