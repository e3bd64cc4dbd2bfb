import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '@opkit/runtime';
import type { APIResource } from '@opkit/runtime/client';
import {
  type ClusterView,
  configSources,
  findProblems,
  installAdvice,
  problemsMessage,
  renderedObjects,
  type Sourced,
} from './preflight.ts';

/** A cluster that serves core v1 and apps/v1, with the namespaces `existing`; it records what was asked. */
function fakeCluster(existing: readonly string[]): ClusterView & { asked: string[] } {
  const served: Record<string, APIResource[]> = {
    v1: [
      { name: 'namespaces', kind: 'Namespace', namespaced: false },
      { name: 'serviceaccounts', kind: 'ServiceAccount', namespaced: true },
      { name: 'services', kind: 'Service', namespaced: true },
    ],
    'apps/v1': [{ name: 'deployments', kind: 'Deployment', namespaced: true }],
    'rbac.authorization.k8s.io/v1': [{ name: 'clusterroles', kind: 'ClusterRole', namespaced: false }],
    'apiextensions.k8s.io/v1': [
      { name: 'customresourcedefinitions', kind: 'CustomResourceDefinition', namespaced: false },
    ],
  };
  const asked: string[] = [];
  return {
    asked,
    async resources(apiVersion) {
      asked.push(apiVersion);
      return served[apiVersion] ?? [];
    },
    async namespaceExists(name) {
      asked.push(`namespace ${name}`);
      return existing.includes(name);
    },
  };
}

const obj = (apiVersion: string, kind: string, name: string, namespace?: string): KubeObject => ({
  apiVersion,
  kind,
  metadata: { name, ...(namespace ? { namespace } : {}) },
});
const at = (object: KubeObject, source: string): Sourced => ({ object, source });

const crd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.toys.example.org' },
  spec: {
    group: 'toys.example.org',
    scope: 'Namespaced',
    names: { kind: 'Gadget' },
    versions: [
      { name: 'v1', served: true },
      { name: 'v0', served: false },
    ],
  },
} as KubeObject;

test('kinds the cluster serves, or that CRDs being applied define, pass; the rest are named with their files', async () => {
  const cluster = fakeCluster([]);
  const problems = await findProblems(
    [
      at(obj('v1', 'Namespace', 'gadget-system'), 'config/manager/manager.yaml'),
      at(crd, 'config/crd/bases/toys.yaml'),
      at(obj('toys.example.org/v1', 'Gadget', 'sample', 'gadget-system'), 'config/samples/gadget.yaml'),
      at(obj('toys.example.org/v0', 'Gadget', 'old', 'gadget-system'), 'config/samples/old.yaml'),
      at(obj('cert-manager.io/v1', 'Issuer', 'selfsigned', 'gadget-system'), 'config/certmanager/certificate.yaml'),
      at(obj('cert-manager.io/v1', 'Certificate', 'serving', 'gadget-system'), 'config/certmanager/certificate.yaml'),
      at(obj('cert-manager.io/v1', 'Certificate', 'metrics', 'gadget-system'), 'config/certmanager/metrics.yaml'),
    ],
    cluster,
    { defaultNamespace: 'default' },
  );
  assert.deepEqual(problems.kinds, [
    { apiVersion: 'toys.example.org/v0', kind: 'Gadget', sources: ['config/samples/old.yaml'] },
    { apiVersion: 'cert-manager.io/v1', kind: 'Issuer', sources: ['config/certmanager/certificate.yaml'] },
    {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      sources: ['config/certmanager/certificate.yaml', 'config/certmanager/metrics.yaml'],
    },
  ]);
  assert.deepEqual(problems.namespaces, [], 'gadget-system is created by the manifests');
});

test('a namespace must exist or be created (by a Namespace object or by the caller); cluster-scoped objects need none', async () => {
  const cluster = fakeCluster(['default']);
  const problems = await findProblems(
    [
      at(obj('rbac.authorization.k8s.io/v1', 'ClusterRole', 'reader'), 'a.yaml'),
      at(obj('v1', 'ServiceAccount', 'op', 'missing'), 'a.yaml'),
      at(obj('v1', 'Service', 'op', 'missing'), 'b.yaml'),
      at(obj('apps/v1', 'Deployment', 'op'), 'c.yaml'),
      at(obj('v1', 'Service', 'op', 'release'), 'c.yaml'),
    ],
    cluster,
    { defaultNamespace: 'default', createdNamespaces: ['release'] },
  );
  assert.deepEqual(problems.kinds, []);
  assert.deepEqual(problems.namespaces, [
    { name: 'missing', objects: ['ServiceAccount missing/op', 'Service missing/op'] },
  ]);
  assert.deepEqual(
    cluster.asked.filter((a) => a.startsWith('namespace ')),
    ['namespace missing', 'namespace default'],
    'each namespace is read once; created ones are not read',
  );
});

test('the message says nothing was applied, names each kind with its files and what to install', () => {
  const text = problemsMessage(
    {
      kinds: [
        { apiVersion: 'cert-manager.io/v1', kind: 'Issuer', sources: ['config/certmanager/certificate.yaml'] },
        { apiVersion: 'cert-manager.io/v1', kind: 'Certificate', sources: ['config/certmanager/certificate.yaml'] },
        { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', sources: ['config/prometheus/monitor.yaml'] },
      ],
      namespaces: [{ name: 'missing', objects: ['Service missing/op'] }],
    },
    'https://127.0.0.1:6443',
    'WITHOUT',
  );
  assert.equal(
    text,
    'nothing was applied to https://127.0.0.1:6443: the cluster does not serve kind Issuer in cert-manager.io/v1 ' +
      '(config/certmanager/certificate.yaml), kind Certificate in cert-manager.io/v1 (config/certmanager/certificate.yaml): ' +
      `${installAdvice('cert-manager.io/v1', 'WITHOUT')}; the cluster does not serve kind ServiceMonitor in ` +
      'monitoring.coreos.com/v1 (config/prometheus/monitor.yaml): install what serves monitoring.coreos.com/v1 (its ' +
      'CustomResourceDefinitions, or the API server that serves it) first; namespace missing does not exist and nothing ' +
      'deployed creates it (needed by Service missing/op): create it (kubectl create namespace missing) or change where ' +
      'those objects go',
  );
  assert.match(
    installAdvice('acme.cert-manager.io/v1', 'WITHOUT'),
    /^install cert-manager .*or deploy without it: WITHOUT$/,
  );
});

test('renderedObjects: helm template output, each object with its template path in the project', () => {
  const text = `---
# Source: gadget-operator/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata:
  name: gadget-operator
---
# Source: gadget-operator/templates/certmanager.yaml
# a comment only
---
# Source: gadget-operator/templates/certmanager.yaml
apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: selfsigned
`;
  const objects = renderedObjects(text, 'dist/chart');
  assert.deepEqual(
    objects.map((o) => [o.object.kind, o.source]),
    [
      ['ServiceAccount', 'dist/chart/templates/serviceaccount.yaml'],
      ['Issuer', 'dist/chart/templates/certmanager.yaml'],
    ],
  );
});

test('configSources: the config/ file of each generated object; kustomizations and dist/ are passed over', () => {
  const files = new Map([
    [
      'config/certmanager/certificate.yaml',
      '# generated\nkind: Issuer\nmetadata: { name: i }\n---\nkind: Certificate\nmetadata: { name: c }\n',
    ],
    ['config/certmanager/kustomization.yaml', 'kind: Kustomization\nmetadata: { name: k }\n'],
    ['dist/install.yaml', 'kind: Issuer\nmetadata: { name: i }\n'],
  ]);
  assert.deepEqual(
    [...configSources(files)],
    [
      ['Issuer/i', 'config/certmanager/certificate.yaml'],
      ['Certificate/c', 'config/certmanager/certificate.yaml'],
    ],
  );
});
