import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GENERATED_LINE } from './emit.ts';
import { generate } from './generate.ts';
import { assignNames, resourceConstName } from './names.ts';
import type { OpenApiDocument, Schema } from './openapi.ts';
import { committedKinds } from './output.ts';
import type { GroupVersion } from './select.ts';
import { firstSentence } from './tsdoc.ts';

const ref = (id: string): Schema => ({ $ref: `#/components/schemas/${id}` });
const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const listOp = (kind: string, group = '', version = 'v1') => ({
  get: { 'x-kubernetes-action': 'list', 'x-kubernetes-group-version-kind': { group, version, kind } },
});

const core: OpenApiDocument = {
  paths: {
    '/api/v1/namespaces/{namespace}/widgets': listOp('Widget'),
    '/api/v1/widgets': listOp('Widget'),
    '/api/v1/namespaces/{namespace}/widgets/{name}/status': listOp('Widget'),
    '/api/v1/gadgets': listOp('Gadget'),
  },
  components: {
    schemas: {
      [`${META}.ObjectMeta`]: { type: 'object', properties: { name: { type: 'string', description: 'Name.' } } },
      [`${META}.Time`]: { type: 'string', format: 'date-time' },
      'io.k8s.apimachinery.pkg.api.resource.Quantity': { oneOf: [{ type: 'string' }, { type: 'number' }] },
      'io.k8s.apimachinery.pkg.util.intstr.IntOrString': { oneOf: [{ type: 'integer' }, { type: 'string' }] },
      'io.k8s.api.core.v1.Widget': {
        description: 'Widget is a thing, e.g. a gizmo. It has more to say.',
        type: 'object',
        'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Widget' }],
        properties: {
          metadata: { allOf: [ref(`${META}.ObjectMeta`)] },
          spec: { allOf: [ref('io.k8s.api.core.v1.WidgetSpec')], description: 'The spec.' },
        },
      },
      'io.k8s.api.core.v1.WidgetSpec': {
        type: 'object',
        required: ['size'],
        properties: {
          size: ref('io.k8s.apimachinery.pkg.api.resource.Quantity'),
          port: { ...ref('io.k8s.apimachinery.pkg.util.intstr.IntOrString'), description: 'A port */ @here.' },
          since: ref(`${META}.Time`),
          'x-extra': { type: 'array', items: { type: 'integer' } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      'io.k8s.api.core.v1.Gadget': {
        type: 'object',
        'x-kubernetes-group-version-kind': [{ group: '', version: 'v1', kind: 'Gadget' }],
        properties: { metadata: ref(`${META}.ObjectMeta`) },
      },
    },
  },
};
const GVS: readonly GroupVersion[] = [{ group: '', version: 'v1', file: 'core' }];

test('a kind becomes an interface with required metadata and a Kind constant of its plural and scope', () => {
  const files = generate(new Map([['api/v1', core]]), 'v9.9.9', GVS);
  assert.deepEqual([...files.keys()], ['core.ts', 'meta.ts', 'index.ts']);
  const text = files.get('core.ts') ?? '';
  assert.ok(text.startsWith(`${GENERATED_LINE}\n`), 'the generated line comes first');
  assert.match(text, /Kubernetes v9\.9\.9/);
  assert.match(
    text,
    /\/\*\*\n \* Widget is a thing, e\.g\. a gizmo\.\n \* `apiVersion: v1`, `kind: Widget`\.\n \*\/\nexport interface Widget \{/,
  );
  assert.match(text, /\n {2}metadata: ObjectMeta;\n/);
  assert.match(text, /\n {2}spec\?: WidgetSpec;\n/);
  assert.match(
    text,
    /export const Widgets = resource<Widget>\(\{ group: '', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true \}\);/,
  );
  assert.match(text, /export const Gadgets = resource<Gadget>\(\{[^)]*plural: 'gadgets', namespaced: false \}\);/);
  assert.match(text, /import type \{ ObjectMeta \} from '\.\/meta\.ts';/);
});

test('fields in JSON form: quantities, int-or-strings, timestamps, arrays, maps; required as the schema says', () => {
  const text = generate(new Map([['api/v1', core]]), 'v9.9.9', GVS).get('core.ts') ?? '';
  assert.match(text, /\n {2}size: string \| number;\n/);
  assert.match(text, /\n {2}port\?: number \| string;\n/);
  assert.match(text, /\n {2}since\?: string;\n/);
  assert.match(text, /\n {2}'x-extra'\?: number\[\];\n/);
  assert.match(text, /\n {2}labels\?: Record<string, string>;\n/);
  assert.match(text, /\/\*\* A port \*\\\/ \\@here\. \*\//, 'a description cannot close the comment or start a tag');
  assert.match(text, /\/\*\* The `size` field of a WidgetSpec\. \*\//, 'a field without a description still has a doc');
});

test('the first sentence stops at a full stop, not at an abbreviation or a dotted name', () => {
  assert.equal(firstSentence('Pod is a thing, i.e. a group. More info: x'), 'Pod is a thing, i.e. a group.');
  assert.equal(firstSentence('Uses k8s.io/name and 1.5 cores.\n\nMore.'), 'Uses k8s.io/name and 1.5 cores.');
  assert.equal(firstSentence('No full stop\n\nhere'), 'No full stop');
});

test('a shared name goes to the kind, then the earlier group; the other is prefixed with package and version', () => {
  const names = assignNames(
    [
      'io.k8s.api.events.v1.Event',
      'io.k8s.api.core.v1.Event',
      'io.k8s.api.storage.v1.TokenRequest',
      'io.k8s.api.authentication.v1.TokenRequest',
    ],
    new Set(['io.k8s.api.core.v1.Event', 'io.k8s.api.events.v1.Event', 'io.k8s.api.authentication.v1.TokenRequest']),
  );
  assert.equal(names.get('io.k8s.api.core.v1.Event'), 'Event');
  assert.equal(names.get('io.k8s.api.events.v1.Event'), 'EventsV1Event');
  assert.equal(names.get('io.k8s.api.authentication.v1.TokenRequest'), 'TokenRequest');
  assert.equal(names.get('io.k8s.api.storage.v1.TokenRequest'), 'StorageV1TokenRequest');
  const meta = assignNames(['io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector'], new Set());
  assert.equal(
    meta.get('io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector'),
    'MetaV1LabelSelector',
    'a reserved name',
  );
});

test('resource constants spell the plural with the kind’s capitals', () => {
  assert.equal(resourceConstName('NetworkPolicy', 'NetworkPolicy', 'networkpolicies'), 'NetworkPolicies');
  assert.equal(
    resourceConstName('CSIStorageCapacity', 'CSIStorageCapacity', 'csistoragecapacities'),
    'CSIStorageCapacities',
  );
  assert.equal(resourceConstName('EventsV1Event', 'Event', 'events'), 'EventsV1Events');
  assert.equal(resourceConstName('Endpoints', 'Endpoints', 'endpoints'), 'Endpoints');
});

test('the entry lists every name once, without export * and without the names @opkit/runtime/client exports', () => {
  const index = generate(new Map([['api/v1', core]]), 'v9.9.9', GVS).get('index.ts') ?? '';
  assert.ok(index.startsWith(`${GENERATED_LINE}\n`));
  assert.match(index, /\/\*\*\n \* @module @opkit\/runtime\/kinds\n/);
  assert.match(index, /export type \{\n {2}Gadget, Widget, WidgetSpec,\n\} from '\.\/core\.ts';/);
  assert.match(index, /export \{\n {2}Gadgets, Widgets,\n\} from '\.\/core\.ts';/);
  assert.doesNotMatch(index, /export \*/);
  assert.doesNotMatch(index, /^ {2}.*\bObjectMeta,/m);
});

test('every committed generated file is in the entry', async () => {
  const committed = await committedKinds();
  const index = committed.get('index.ts') ?? '';
  assert.ok(committed.size > 10, `only ${committed.size} generated files`);
  for (const name of committed.keys()) if (name !== 'index.ts') assert.ok(index.includes(`from './${name}';`), name);
});
