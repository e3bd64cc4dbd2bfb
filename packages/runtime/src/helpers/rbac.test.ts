import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Pods } from '../client/builtins.ts';
import { managerPermissions, permission, policyRules, rbacManifests } from './rbac.ts';

test('rules merge by group and verb set, sorted and byte-stable', () => {
  const perms = [
    permission(Pods, ['list', 'watch', 'create', 'delete']),
    permission(Pods, ['watch', 'list']),
    ...managerPermissions(true),
  ];
  const rules = policyRules(perms.filter((p) => p.scope !== 'namespace'));
  assert.deepEqual(rules, [
    { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'create', 'delete'] },
  ]);
  const m = rbacManifests('op', 'ops', perms);
  assert.deepEqual(m.role?.rules, [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ]);
  assert.equal(m.role?.metadata.namespace, 'ops');
  assert.equal(JSON.stringify(rbacManifests('op', 'ops', perms)), JSON.stringify(m));
  assert.equal(rbacManifests('op', 'ops', [permission(Pods, ['get'])]).role, undefined);
});
