import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { ClusterRoles, ConfigMaps, Deployments } from '../client/kinds/index.ts';
import { defineKind } from '../crd/kind.ts';
import { PolicyError } from './common.ts';
import { definePolicy } from './policy.ts';

const Widgets = defineKind({
  group: 'shop.example.com',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  spec: Type.Object({ replicas: Type.Integer() }),
  status: Type.Object({}),
});

test('the policy and its binding, with the defaults Kubernetes users expect', () => {
  const [policy, binding] = definePolicy({
    name: 'widget-limits',
    match: [{ kind: Widgets }, { kind: Deployments, operations: ['CREATE'] }],
    validations: [{ expression: 'object.spec.replicas <= 5', message: 'at most 5' }],
  }).manifests();
  assert.deepEqual(policy, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'widget-limits' },
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
          { apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] },
        ],
      },
      validations: [{ expression: 'object.spec.replicas <= 5', message: 'at most 5' }],
    },
  });
  assert.deepEqual(binding, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'widget-limits-binding' },
    spec: { policyName: 'widget-limits', validationActions: ['Deny'] },
  });
});

test('params, match conditions, variables, audit annotations, selectors and actions reach the manifests', () => {
  const [policy, binding] = definePolicy({
    name: 'limits',
    match: [{ kind: Widgets }],
    namespaceSelector: { matchLabels: { env: 'prod' } },
    matchConditions: [{ name: 'not-system', expression: "!request.userInfo.username.startsWith('system:')" }],
    variables: [{ name: 'max', expression: 'int(params.data.max)' }],
    validations: [
      {
        expression: 'object.spec.replicas <= variables.max',
        messageExpression: "'over ' + params.data.max",
        reason: 'Forbidden',
      },
    ],
    auditAnnotations: [{ key: 'replicas', valueExpression: "'r=' + string(object.spec.replicas)" }],
    failurePolicy: 'Ignore',
    params: { kind: ConfigMaps, name: 'widget-limits', namespace: 'shop' },
    validationActions: ['Warn', 'Audit'],
  }).manifests(); // typed: ValidatingAdmissionPolicy and its binding, no cast
  assert.deepEqual(policy.spec?.paramKind, { apiVersion: 'v1', kind: 'ConfigMap' });
  assert.equal(policy.spec?.failurePolicy, 'Ignore');
  assert.deepEqual(policy.spec?.matchConstraints?.namespaceSelector, {
    matchLabels: { env: 'prod' },
  });
  assert.equal(policy.spec?.variables?.length, 1);
  assert.equal(policy.spec?.auditAnnotations?.length, 1);
  assert.deepEqual(binding.spec, {
    policyName: 'limits',
    validationActions: ['Warn', 'Audit'],
    paramRef: { name: 'widget-limits', namespace: 'shop', parameterNotFoundAction: 'Deny' },
  });
});

test('a definition the apiserver would refuse is a PolicyError naming the field', () => {
  const base = { name: 'p', match: [{ kind: Widgets }], validations: [{ expression: 'true' }] } as const;
  const cases: [object, string][] = [
    [{ name: 'Not_A_Name' }, 'name'],
    [{ match: [] }, 'match'],
    [{ validations: [] }, 'validations'],
    [{ validations: [{ expression: ' ' }] }, 'validations[0].expression'],
    [{ validations: [{ expression: 'true', reason: 'Teapot' }] }, 'validations[0].reason'],
    [{ validations: [{ expression: 'true', message: 'two\nlines' }] }, 'validations[0].message'],
    [{ match: [{ kind: Widgets, operations: ['PATCH'] }] }, 'match[0].operations[0]'],
    [{ variables: [{ name: '1st', expression: 'true' }] }, 'variables[0].name'],
    [
      {
        matchConditions: [
          { name: 'a', expression: 'true' },
          { name: 'a', expression: 'true' },
        ],
      },
      'matchConditions[1].name',
    ],
    [{ auditAnnotations: [{ key: 'a/b', valueExpression: "'x'" }] }, 'auditAnnotations[0].key'],
    [{ validationActions: ['Deny', 'Warn'] }, 'validationActions'],
    [{ validationActions: [] }, 'validationActions'],
    [{ params: { kind: ConfigMaps } }, 'params'],
    [{ params: { kind: ConfigMaps, name: 'x', parameterNotFoundAction: 'Maybe' } }, 'params.parameterNotFoundAction'],
    [{ params: { kind: ClusterRoles, name: 'x', namespace: 'shop' } }, 'params.namespace'],
    [
      {
        auditAnnotations: [
          { key: 'a', valueExpression: "'x'" },
          { key: 'a', valueExpression: "'y'" },
        ],
      },
      'auditAnnotations[1].key',
    ],
    [{ auditAnnotations: [{ key: 'k'.repeat(64), valueExpression: "'x'" }] }, 'auditAnnotations[0].key'],
    // a typo in a selector would select everything: refused
    [{ namespaceSelector: { matchLabel: { team: 'shop' } } }, 'namespaceSelector.matchLabel'],
    [{ objectSelector: { matchLabels: { team: 7 } } }, 'objectSelector.matchLabels.team'],
    [
      { objectSelector: { matchExpressions: [{ key: 'a', operator: 'Equals' }] } },
      'objectSelector.matchExpressions[0].operator',
    ],
    [{ params: { kind: ConfigMaps, selector: { matchLables: {} } } }, 'params.selector.matchLables'],
  ];
  for (const [patch, path] of cases) {
    assert.throws(
      () => definePolicy({ ...base, ...patch } as never),
      (e: unknown) => e instanceof PolicyError && e.code === 'InvalidPolicy' && e.path === path,
      `${JSON.stringify(patch)} → ${path}`,
    );
  }
  assert.match(
    (() => {
      try {
        definePolicy({ ...base, name: 'Über' });
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    })(),
    /^policy "Über": name: must be a lower-case DNS subdomain/,
  );
});

test('the manifests are what was checked: changing the definition afterwards changes nothing', () => {
  const validations = [{ expression: 'object.spec.replicas <= 5' }];
  const policy = definePolicy({ name: 'frozen', match: [{ kind: Widgets }], validations });
  validations[0] = { expression: '' };
  assert.equal(policy.manifests()[0].spec?.validations?.[0]?.expression, 'object.spec.replicas <= 5');
  assert.throws(() => {
    (policy.definition.validations as { expression: string }[]).push({ expression: 'true' });
  }, TypeError);
});
