import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { KubeObject } from '@opkit/runtime';
import type { CustomKind } from '@opkit/runtime/crd';
import yaml from 'js-yaml';
import type { Project } from '../project/project.ts';
import { MEMBER_RBAC_FILE, memberRbacObjects } from './fleet.ts';
import { generatedFiles, installObjects, type LoadedApi } from './manifests.ts';

const project: Project = {
  layout: 'opkit.dev/v1',
  projectName: 'tenant-operator',
  domain: 'example.com',
  namespace: 'tenant-system',
  image: 'tenant-operator:dev',
  resources: [],
};
const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'tenants.app.example.com' },
  spec: { group: 'app.example.com' },
};
const api = (memberPermissions?: LoadedApi['memberPermissions']): LoadedApi => ({
  entry: { group: 'app', version: 'v1', kind: 'Tenant', plural: 'tenants', namespaced: true, controller: true },
  kind: { crd: () => crd } as unknown as CustomKind<KubeObject>,
  permissions: [{ group: 'app.example.com', resource: 'tenants', verbs: ['get', 'list', 'watch'] }],
  ...(memberPermissions ? { memberPermissions } : {}),
});

test('without memberPermissions nothing is written for members', () => {
  assert.deepEqual(memberRbacObjects(project, [api()]), []);
  const files = generatedFiles(project, [api()]);
  assert.equal([...files.keys()].filter((f) => f.startsWith('config/fleet/')).length, 0);
});

test("the members' RBAC: the declared permissions and Events, bound to <name>-member, with a token Secret", () => {
  const members = api([
    { group: '', resource: 'configmaps', verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
    { group: '', resource: 'namespaces', verbs: ['create', 'patch'] },
    { group: '', resource: 'secrets', verbs: ['get'], scope: 'namespace' },
  ]);
  const objects = memberRbacObjects(project, [members]);
  assert.deepEqual(
    objects.map((o) => `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`),
    [
      'Namespace /tenant-system',
      'ServiceAccount tenant-system/tenant-operator-member',
      'Secret tenant-system/tenant-operator-member-token',
      'ClusterRole /tenant-operator-member',
      'ClusterRoleBinding /tenant-operator-member',
      'Role tenant-system/tenant-operator-member',
      'RoleBinding tenant-system/tenant-operator-member',
    ],
  );
  const role = objects.find((o) => o.kind === 'ClusterRole') as unknown as {
    rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  };
  const resources = role.rules.flatMap((r) => r.resources);
  assert.ok(resources.includes('configmaps') && resources.includes('namespaces') && resources.includes('events'));
  assert.ok(!resources.includes('leases') && !resources.includes('tenants'), 'nothing of the hub');
  const token = objects.find((o) => o.kind === 'Secret') as unknown as {
    type: string;
    metadata: KubeObject['metadata'];
  };
  assert.equal(token.type, 'kubernetes.io/service-account-token');
  assert.equal(token.metadata.annotations?.['kubernetes.io/service-account.name'], 'tenant-operator-member');

  const files = generatedFiles(project, [members]);
  const written = yaml.loadAll(files.get(MEMBER_RBAC_FILE) ?? '') as KubeObject[];
  assert.equal(written.length, objects.length);
  assert.match(files.get('config/fleet/kustomization.yaml') ?? '', /member-rbac\.yaml/);
  assert.ok(!/\.\.\/fleet/.test(files.get('config/default/kustomization.yaml') ?? ''), 'not in the hub install');
  assert.ok(
    installObjects(project, [members]).every((o) => o.metadata.name !== 'tenant-operator-member'),
    'not in dist/install.yaml',
  );
});
