import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { ConfigMaps, Deployments } from '../client/kinds/index.ts';
import { defineKind } from '../crd/kind.ts';
import { PolicyError } from './common.ts';
import { defineMutatingPolicy, type PolicyMutation } from './mutating.ts';

const Widgets = defineKind({
  group: 'shop.example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  spec: Type.Object({ replicas: Type.Integer() }),
  status: Type.Object({}),
});

test('the policy and its binding, with the defaults: Fail, Never, CREATE and UPDATE, no params', () => {
  const [policy, binding] = defineMutatingPolicy({
    name: 'widget-defaults',
    match: [{ kind: Widgets }],
    mutations: [{ applyConfiguration: 'Object{spec: Object.spec{replicas: 3}}' }],
  }).manifests();
  assert.deepEqual(policy, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: 'widget-defaults' },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        matchPolicy: 'Equivalent',
        resourceRules: [
          {
            apiGroups: ['shop.example.com'],
            apiVersions: ['v1'],
            operations: ['CREATE', 'UPDATE'],
            resources: ['widgets'],
          },
        ],
      },
      mutations: [
        {
          patchType: 'ApplyConfiguration',
          applyConfiguration: { expression: 'Object{spec: Object.spec{replicas: 3}}' },
        },
      ],
      reinvocationPolicy: 'Never',
    },
  });
  assert.deepEqual(binding, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: 'widget-defaults-binding' },
    spec: { policyName: 'widget-defaults' },
  });
});

test('apply configurations, JSON patches, params, conditions, variables and selectors reach the manifests', () => {
  const [policy, binding] = defineMutatingPolicy({
    name: 'team-labels',
    match: [{ kind: Widgets }, { kind: Deployments, operations: ['CREATE'] }],
    namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
    objectSelector: { matchLabels: { managed: 'true' } },
    matchConditions: [{ name: 'not-system', expression: "!request.userInfo.username.startsWith('system:')" }],
    variables: [{ name: 'team', expression: 'params.data.team' }],
    mutations: [
      { applyConfiguration: 'Object{spec: Object.spec{replicas: 3}}' },
      { jsonPatch: '[JSONPatch{op: "add", path: "/metadata/labels/team", value: variables.team}]' },
    ],
    failurePolicy: 'Ignore',
    reinvocationPolicy: 'IfNeeded',
    params: { kind: ConfigMaps, selector: { matchLabels: { role: 'teams' } }, namespace: 'shop' },
  }).manifests(); // typed: MutatingAdmissionPolicy and its binding, no cast
  assert.equal(
    JSON.stringify(policy),
    JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'team-labels' },
      spec: {
        failurePolicy: 'Ignore',
        matchConstraints: {
          matchPolicy: 'Equivalent',
          namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
          objectSelector: { matchLabels: { managed: 'true' } },
          resourceRules: [
            {
              apiGroups: ['shop.example.com'],
              apiVersions: ['v1'],
              operations: ['CREATE', 'UPDATE'],
              resources: ['widgets'],
            },
            { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] },
          ],
        },
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConditions: [{ name: 'not-system', expression: "!request.userInfo.username.startsWith('system:')" }],
        variables: [{ name: 'team', expression: 'params.data.team' }],
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: { expression: 'Object{spec: Object.spec{replicas: 3}}' },
          },
          {
            patchType: 'JSONPatch',
            jsonPatch: { expression: '[JSONPatch{op: "add", path: "/metadata/labels/team", value: variables.team}]' },
          },
        ],
        reinvocationPolicy: 'IfNeeded',
      },
    }),
    'the keys in their fixed order',
  );
  assert.equal(
    JSON.stringify(binding),
    JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name: 'team-labels-binding' },
      spec: {
        policyName: 'team-labels',
        paramRef: { namespace: 'shop', selector: { matchLabels: { role: 'teams' } }, parameterNotFoundAction: 'Deny' },
      },
    }),
  );
});

test('a definition the apiserver would refuse is a PolicyError naming the field', () => {
  const base = {
    name: 'p',
    match: [{ kind: Widgets }],
    mutations: [{ jsonPatch: '[JSONPatch{op: "remove", path: "/spec/paused"}]' }],
  } as const;
  const cases: [object, string][] = [
    [{ name: 'Team-Labels' }, 'name'],
    [{ name: 'x'.repeat(246) }, 'name'],
    [{ match: [] }, 'match'],
    [{ mutations: [] }, 'mutations'],
    [{ mutations: undefined }, 'mutations'],
    [{ mutations: [{}] }, 'mutations[0]'],
    [{ mutations: [null] }, 'mutations[0]'],
    [{ mutations: [{ applyConfiguration: 'Object{}', jsonPatch: '[]' }] }, 'mutations[0]'],
    [{ mutations: [{ applyConfiguration: ' ' }] }, 'mutations[0].applyConfiguration'],
    [{ mutations: [{ jsonPatch: '[]' }, { jsonPatch: '' }] }, 'mutations[1].jsonPatch'],
    [{ mutations: [{ jsonPatch: 7 }] }, 'mutations[0].jsonPatch'],
    [{ match: [{ kind: Widgets, operations: ['CREATE', 'DELETE'] }] }, 'match[0].operations[1]'],
    [{ match: [{ kind: Widgets, operations: ['CONNECT'] }] }, 'match[0].operations[0]'],
    [{ match: [{ kind: Widgets, operations: [] }] }, 'match[0].operations'],
    [{ reinvocationPolicy: 'Always' }, 'reinvocationPolicy'],
    [{ failurePolicy: 'Retry' }, 'failurePolicy'],
    [{ variables: [{ name: 'team-name', expression: "'a'" }] }, 'variables[0].name'],
    [{ matchConditions: [{ name: 'c', expression: '' }] }, 'matchConditions[0].expression'],
    [{ namespaceSelector: { matchLabel: { team: 'shop' } } }, 'namespaceSelector.matchLabel'],
    [{ objectSelector: { matchLabels: { team: 7 } } }, 'objectSelector.matchLabels.team'],
    [{ params: { kind: ConfigMaps, name: 'x', selector: {} } }, 'params'],
    [{ params: { kind: ConfigMaps } }, 'params'],
    [{ params: { kind: ConfigMaps, selector: { matchLables: {} } } }, 'params.selector.matchLables'],
  ];
  for (const [patch, path] of cases) {
    assert.throws(
      () => defineMutatingPolicy({ ...base, ...patch } as never),
      (e: unknown) => e instanceof PolicyError && e.code === 'InvalidPolicy' && e.path === path,
      `${JSON.stringify(patch)} → ${path}`,
    );
  }
  assert.throws(
    // the type refuses it; from JavaScript, defineMutatingPolicy does
    () => defineMutatingPolicy({ ...base, match: [{ kind: Widgets, operations: ['DELETE'] }] } as never),
    (e: unknown) =>
      e instanceof PolicyError &&
      e.message ===
        'policy "p": match[0].operations[0]: must be CREATE or UPDATE: a DELETE has no object to mutate, and a CONNECT reaches only subresources, which match does not name',
  );
});

test('hostile input: expression text is kept byte for byte, a name with upper case is refused', () => {
  const expression = 'Object{metadata: Object.metadata{annotations: {"note": "grüße, 世界 \u{1F600} \u200B"}}}';
  const [policy] = defineMutatingPolicy({
    name: 'notes',
    match: [{ kind: Widgets }],
    mutations: [{ applyConfiguration: expression }],
  }).manifests();
  assert.equal(policy.spec?.mutations?.[0]?.applyConfiguration?.expression, expression);
  assert.deepEqual(
    Buffer.from(JSON.stringify(policy.spec?.mutations?.[0]?.applyConfiguration?.expression)),
    Buffer.from(JSON.stringify(expression)),
  );
  assert.throws(
    () => defineMutatingPolicy({ name: 'Notes', match: [{ kind: Widgets }], mutations: [{ jsonPatch: '[]' }] }),
    (e: unknown) =>
      e instanceof PolicyError &&
      e.path === 'name' &&
      /^policy "Notes": name: must be a lower-case DNS subdomain/.test(e.message),
  );
});

test('the manifests are what was checked: changing the definition afterwards changes nothing', () => {
  const mutations: PolicyMutation[] = [{ jsonPatch: '[]' }];
  const operations: ('CREATE' | 'UPDATE')[] = ['CREATE'];
  const policy = defineMutatingPolicy({ name: 'frozen', match: [{ kind: Widgets, operations }], mutations });
  mutations[0] = { jsonPatch: '' };
  mutations.push({ applyConfiguration: 'Object{}' });
  operations.push('UPDATE');
  const [manifest] = policy.manifests();
  assert.deepEqual(manifest.spec?.mutations, [{ patchType: 'JSONPatch', jsonPatch: { expression: '[]' } }]);
  assert.deepEqual(manifest.spec?.matchConstraints?.resourceRules?.[0]?.operations, ['CREATE']);
  assert.ok(Object.isFrozen(policy.definition));
  assert.ok(Object.isFrozen(policy.definition.mutations[0]));
  assert.throws(() => {
    (policy.definition.mutations as PolicyMutation[]).push({ jsonPatch: '[]' });
  }, TypeError);
  const frozenOperations = policy.definition.match[0]?.operations;
  assert.ok(frozenOperations !== undefined && Object.isFrozen(frozenOperations));
  assert.equal(policy.definition.match[0]?.kind, Widgets, "the kind is the caller's, not a copy");
});
