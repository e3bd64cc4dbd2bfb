import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '@opkit/runtime';
import { resource } from '@opkit/runtime/client';
import type { CustomKind } from '@opkit/runtime/crd';
import yaml from 'js-yaml';
import type { Project } from '../project/project.ts';
import { chartFiles, splitImage } from './helm.ts';
import { installObjects, type LoadedApi } from './manifests.ts';

const project: Project = {
  layout: 'opkit.dev/v1',
  projectName: 'gadget-operator',
  domain: 'example.com',
  namespace: 'gadget-system',
  image: 'registry.example.org/team/gadget-operator:1.4.2',
  resources: [],
};
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.app.example.com' },
  spec: { group: 'app.example.com' },
};
const apis: LoadedApi[] = [
  {
    entry: { group: 'app', version: 'v1', kind: 'Gadget', plural: 'gadgets', namespaced: true, controller: true },
    kind: { crd: () => crd } as unknown as CustomKind<KubeObject>,
    permissions: [{ group: 'app.example.com', resource: 'gadgets', verbs: ['get', 'list', 'watch'] }],
  },
];

test('splitImage separates repository, tag and digest; a registry port is not a tag', () => {
  assert.deepEqual(splitImage('a/b:1.0'), { repository: 'a/b', tag: '1.0', digest: '' });
  assert.deepEqual(splitImage('localhost:5000/b'), { repository: 'localhost:5000/b', tag: '', digest: '' });
  assert.deepEqual(splitImage('b@sha256:abc'), { repository: 'b', tag: '', digest: 'sha256:abc' });
  assert.deepEqual(splitImage('localhost:5000/b:2@sha256:abc'), {
    repository: 'localhost:5000/b',
    tag: '2',
    digest: 'sha256:abc',
  });
});

test('the chart is made for the image being deployed: its values name that image, not the project’s', () => {
  const values = (image: string) =>
    (yaml.load(chartFiles(project, apis, { image }).get('dist/chart/values.yaml') ?? '') as { image: unknown }).image;
  assert.deepEqual(values('reg.example/op'), {
    repository: 'reg.example/op',
    tag: '',
    digest: '',
    pullPolicy: 'IfNotPresent',
  });
  assert.deepEqual(values('reg.example/op@sha256:0123'), {
    repository: 'reg.example/op',
    tag: '',
    digest: 'sha256:0123',
    pullPolicy: 'IfNotPresent',
  });
  const helpers = chartFiles(project, apis).get('dist/chart/templates/_helpers.tpl') ?? '';
  assert.match(helpers, /\{\{ \.Values\.image\.repository \}\}@\{\{ \.Values\.image\.digest \}\}/);
  assert.match(helpers, /\.Values\.image\.tag \| default "latest"/);
  assert.doesNotMatch(helpers, /AppVersion/, 'the image never falls back to appVersion');
});

test('the chart: CRDs under crds/, values for image, replicas, resources, leader election, metrics mode, log level', () => {
  const files = chartFiles(project, apis);
  assert.deepEqual([...files.keys()].sort(), [
    'dist/chart/Chart.yaml',
    'dist/chart/crds/gadgets.app.example.com.yaml',
    'dist/chart/templates/NOTES.txt',
    'dist/chart/templates/_helpers.tpl',
    'dist/chart/templates/leader_election.yaml',
    'dist/chart/templates/manager.yaml',
    'dist/chart/templates/rbac.yaml',
    'dist/chart/templates/sharding.yaml',
    'dist/chart/values.yaml',
  ]);
  const chart = yaml.load(files.get('dist/chart/Chart.yaml') ?? '') as Record<string, string>;
  assert.deepEqual(
    { name: chart.name, version: chart.version, appVersion: chart.appVersion, apiVersion: chart.apiVersion },
    { name: 'gadget-operator', version: '1.4.2', appVersion: '1.4.2', apiVersion: 'v2' },
  );
  const values = yaml.load(files.get('dist/chart/values.yaml') ?? '') as Record<string, unknown>;
  assert.deepEqual(values, {
    image: {
      repository: 'registry.example.org/team/gadget-operator',
      tag: '1.4.2',
      digest: '',
      pullPolicy: 'IfNotPresent',
    },
    replicas: 2,
    resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '1', memory: '128Mi' } },
    leaderElection: { enabled: true, namespace: '' },
    sharding: { enabled: false, filter: 'auto' },
    metrics: { secure: true },
    logLevel: 'info',
  });
  const manager = files.get('dist/chart/templates/manager.yaml') ?? '';
  assert.match(manager, /^ {2}namespace: \{\{ \.Release\.Namespace \}\}$/m);
  assert.match(manager, /^ {2}replicas: \{\{ include "gadget-operator\.replicas" \. \}\}$/m);
  assert.match(
    files.get('dist/chart/templates/_helpers.tpl') ?? '',
    /ternary \.Values\.replicas 1 \(or \.Values\.leaderElection\.enabled \.Values\.sharding\.enabled\)/,
    'one replica without leader election or sharding',
  );
  const sharding = files.get('dist/chart/templates/sharding.yaml') ?? '';
  assert.match(sharding, /^\{\{- if \.Values\.sharding\.enabled \}\}/m, 'sharding RBAC only when sharded');
  assert.match(sharding, /- list\n\s+- create\n\s+- update\n\s+- delete/);
  assert.match(sharding, /namespace: \{\{ \.Values\.leaderElection\.namespace \| default \.Release\.Namespace \}\}/);
  assert.match(
    files.get('dist/chart/templates/_helpers.tpl') ?? '',
    /if \.Values\.sharding\.enabled \}\}\n- --sharding\n- --sharding-filter=\{\{ \.Values\.sharding\.filter \| default "auto" \}\}/,
  );
  assert.match(manager, /^ {10}args:\n\{\{- include "gadget-operator\.args" \. \| trim \| nindent 12 \}\}$/m);
  assert.match(manager, /^ {10}resources:\n\{\{- toYaml \.Values\.resources \| nindent 12 \}\}$/m);
  assert.doesNotMatch(manager, /gadget-system|OPKIT_SLOT/, 'no project namespace and no placeholder left');
  const rbac = files.get('dist/chart/templates/rbac.yaml') ?? '';
  assert.match(rbac, /name: gadget-operator-metrics-reader\n[\s\S]*nonResourceURLs:\n\s+- \/metrics/);
  assert.match(rbac, /tokenreviews[\s\S]*subjectaccessreviews|subjectaccessreviews[\s\S]*tokenreviews/);
  assert.match(
    files.get('dist/chart/templates/leader_election.yaml') ?? '',
    /\{\{- if \.Values\.leaderElection\.enabled \}\}\n[\s\S]*namespace: \{\{ \.Values\.leaderElection\.namespace \| default \.Release\.Namespace \}\}[\s\S]*\{\{- end \}\}\n$/,
  );
  assert.deepEqual(chartFiles(project, apis), files, 'the same code gives the same bytes');
});

test('webhook configurations go to templates/webhook.yaml, cert-manager objects to certmanager.yaml, in the release namespace', () => {
  const webhook = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: {
      name: 'gadget-operator',
      annotations: { 'cert-manager.io/inject-ca-from': 'gadget-system/gadget-operator-serving-cert' },
    },
    webhooks: [
      { name: 'v.gadgets.app.example.com', clientConfig: { service: { name: 'wh', namespace: 'gadget-system' } } },
    ],
  };
  const certificate = {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: { name: 'gadget-operator-serving-cert', namespace: 'gadget-system' },
    spec: { dnsNames: ['wh.gadget-system.svc', 'wh.gadget-system.svc.cluster.local', 'gadget-system.example.org'] },
  };
  const files = chartFiles(project, apis, { objects: [...installObjects(project, apis), webhook, certificate] });
  assert.equal(files.get('dist/chart/templates/extra.yaml'), undefined);
  const configurations = files.get('dist/chart/templates/webhook.yaml') ?? '';
  const certManager = files.get('dist/chart/templates/certmanager.yaml') ?? '';
  assert.match(configurations, /kind: ValidatingWebhookConfiguration/);
  assert.match(configurations, /^ {8}namespace: \{\{ \.Release\.Namespace \}\}$/m, 'clientConfig.service.namespace');
  assert.match(
    configurations,
    /cert-manager\.io\/inject-ca-from: \{\{ \.Release\.Namespace \}\}\/gadget-operator-serving-cert$/m,
  );
  assert.match(certManager, /- wh\.\{\{ \.Release\.Namespace \}\}\.svc$/m);
  assert.match(certManager, /- wh\.\{\{ \.Release\.Namespace \}\}\.svc\.cluster\.local$/m);
  assert.match(certManager, /- gadget-system\.example\.org$/m, 'a name outside the cluster is left as it is');
  assert.equal(`${configurations}${certManager}`.match(/gadget-system/g)?.length, 1);
});

const Gadgets = resource({
  group: 'app.example.com',
  version: 'v1',
  kind: 'Gadget',
  plural: 'gadgets',
  namespaced: true,
});
/** The project with a validating webhook; `conversion`: its CRD converts through the webhook Service. */
function withWebhooks(conversion: boolean): LoadedApi[] {
  const converting = {
    ...crd,
    spec: { ...crd.spec, conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'] } } },
  };
  return [
    {
      ...(apis[0] as LoadedApi),
      kind: { crd: () => (conversion ? converting : crd) } as unknown as CustomKind<KubeObject>,
      webhooks: {
        definitions: [{ type: 'validating', resource: Gadgets, handler: (() => ({ allowed: true })) as never }],
        conversions: conversion ? ['gadgets.app.example.com'] : [],
        permissions: [],
      },
    },
  ];
}

test('webhooks: certManager.enabled and webhook.enabled/certificates values guard the objects that need them', () => {
  const files = chartFiles(project, withWebhooks(false));
  const file = (name: string) => files.get(`dist/chart/templates/${name}`) ?? '';
  const values = yaml.load(files.get('dist/chart/values.yaml') ?? '') as Record<string, unknown>;
  assert.deepEqual(
    { certManager: values.certManager, webhook: values.webhook },
    { certManager: { enabled: true }, webhook: { enabled: true, certificates: '' } },
  );
  assert.match(
    files.get('dist/chart/values.yaml') ?? '',
    /selfManaged: the operator makes[\s\S]*external: you provide/,
  );
  const helpers = file('_helpers.tpl');
  assert.match(helpers, /define "gadget-operator\.webhookServer" -\}\}\n\{\{- if \.Values\.webhook\.enabled \}\}true/);
  // the Issuer and Certificate only with cert-manager, and only when something is served
  assert.match(
    file('certmanager.yaml'),
    /^\{\{\/\* generated by opkit[^\n]*\*\/\}\}\n\{\{- if and \.Values\.certManager\.enabled \(include "gadget-operator\.webhookServer" \.\) \}\}\n---\n[\s\S]*kind: Issuer[\s\S]*kind: Certificate[\s\S]*\{\{- end \}\}\n$/,
  );
  // the configurations only with webhook.enabled; cert-manager's CA injection only with cert-manager
  const webhook = file('webhook.yaml');
  assert.match(
    webhook,
    /\{\{- if include "gadget-operator\.webhookServer" \. \}\}\n---\nkind: Service|\{\{- if include "gadget-operator\.webhookServer" \. \}\}\n---\napiVersion: v1\nkind: Service/,
  );
  assert.match(
    webhook,
    /\{\{- if \.Values\.webhook\.enabled \}\}\n---\n[\s\S]*kind: ValidatingWebhookConfiguration\n[\s\S]*\n {2}\{\{- if \.Values\.certManager\.enabled \}\}\n {2}annotations:\n {4}cert-manager\.io\/inject-ca-from: [^\n]+\n {2}\{\{- end \}\}\n/,
  );
  // the Deployment: webhook port when serving, the Secret mounted unless self-managed, ENABLE_WEBHOOKS=false when off
  const manager = file('manager.yaml');
  assert.match(manager, /^\{\{- include "gadget-operator\.validate" \. \}\}$/m);
  assert.match(
    manager,
    /^ {12}\{\{- if not \(include "gadget-operator\.webhookServer" \.\) \}\}\n {12}- name: ENABLE_WEBHOOKS\n {14}value: 'false'\n {12}\{\{- end \}\}$/m,
  );
  assert.match(
    manager,
    /^ {12}\{\{- if include "gadget-operator\.webhookServer" \. \}\}\n {12}- name: webhook-server\n[^{]*\{\{- end \}\}$/m,
  );
  assert.match(manager, /^ {10}\{\{- if include "gadget-operator\.certVolume" \. \}\}\n {10}volumeMounts:\n/m);
  assert.match(
    manager,
    /^ {6}\{\{- if include "gadget-operator\.certVolume" \. \}\}\n {6}volumes:\n[^{]*\{\{- end \}\}$/m,
  );
  assert.match(
    helpers,
    /ne \.Values\.webhook\.certificates "selfManaged"/,
    'a self-managed certificate is not mounted',
  );
  // the self-managed mode's RBAC, in the release's namespace
  const selfManaged = file('selfmanaged.yaml');
  assert.match(selfManaged, /eq \.Values\.webhook\.certificates "selfManaged"/);
  assert.match(
    selfManaged,
    /kind: Role\n[\s\S]*namespace: \{\{ \.Release\.Namespace \}\}[\s\S]*gadget-operator-webhook-server-cert/,
  );
  assert.doesNotMatch(`${webhook}${selfManaged}${manager}`, /gadget-system|OPKIT_SLOT/);
  // combinations that cannot work fail with a message naming the values to set
  assert.match(
    helpers,
    /fail "certManager\.enabled=false leaves the webhooks without a certificate[^"]*webhook\.certificates=selfManaged[^"]*webhook\.certificates=external/,
  );
  assert.match(helpers, /fail \(printf "webhook\.certificates=%s needs certManager\.enabled=false/);
  assert.match(helpers, /fail \(printf "webhook\.certificates=%s: use selfManaged or external/);
});

test('webhooks: a CRD converting through the webhook keeps the server on whatever webhook.enabled says', () => {
  const files = chartFiles(project, withWebhooks(true));
  const helpers = files.get('dist/chart/templates/_helpers.tpl') ?? '';
  assert.match(helpers, /define "gadget-operator\.webhookServer" -\}\}\ntrue\n\{\{- end \}\}/);
  assert.match(
    helpers,
    /without a certificate[^"]*\(admission and CRD conversion\)|\(admission and CRD conversion\) without a certificate/,
  );
  assert.match(
    files.get('dist/chart/values.yaml') ?? '',
    /gadgets\.app\.example\.com\) convert between their versions/,
  );
  const notes = files.get('dist/chart/templates/NOTES.txt') ?? '';
  assert.match(
    notes,
    /\{\{- if ne \.Release\.Namespace "gadget-system" \}\}\nWarning: the CRDs \(gadgets\.app\.example\.com\)/,
  );
  assert.match(notes, /CRD conversion only \(webhook\.enabled=false: no admission webhooks\)/);
  // without webhooks the chart is as before: no webhook values, helpers or templates
  const plain = chartFiles(project, apis);
  assert.doesNotMatch(plain.get('dist/chart/values.yaml') ?? '', /certManager|webhook/);
  assert.doesNotMatch(plain.get('dist/chart/templates/manager.yaml') ?? '', /validate|ENABLE_WEBHOOKS/);
});
