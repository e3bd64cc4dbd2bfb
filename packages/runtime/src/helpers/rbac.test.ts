import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { Pods, Secrets } from '../client/builtins.ts';
import { UsageError } from '../errors.ts';
import { managerPermissions, permission, policyRules, rbacManifests } from './rbac.ts';

test('rules merge by group and verb set, sorted and byte-stable', () => {
  const perms = [
    permission(Pods, ['list', 'watch', 'create', 'delete']),
    permission(Pods, ['watch', 'list']),
    ...managerPermissions(true),
  ];
  const rules = policyRules(perms.filter((p) => p.scope !== 'namespace'));
  assert.deepEqual(rules, [
    { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch', 'create', 'delete'] },
    { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
  ]);
  const m = rbacManifests('op', 'ops', perms);
  assert.deepEqual(m.role?.rules, [
    { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] },
  ]);
  assert.equal(m.role?.metadata.namespace, 'ops');
  assert.equal(JSON.stringify(rbacManifests('op', 'ops', perms)), JSON.stringify(m));
  assert.equal(rbacManifests('op', 'ops', [permission(Pods, ['get'])]).role, undefined);
});

test('rule order is the same under every locale (code-unit order): Danish, Lithuanian and Estonian sort differently', () => {
  const script = `
    const { policyRules } = await import(${JSON.stringify(new URL('./rbac.ts', import.meta.url).href)});
    const p = (group, resource) => ({ group, resource, verbs: ['get'] });
    const rules = policyRules([p('apps', 'deployments'), p('aardvark.io', 'burrows'), p('b.io', 'x'), p('ia.io', 'y'), p('j.io', 'z'), p('y.io', 'w'), p('z.io', 'v')]);
    process.stdout.write(JSON.stringify(rules.map((r) => r.apiGroups[0])));
  `;
  const expected = ['aardvark.io', 'apps', 'b.io', 'ia.io', 'j.io', 'y.io', 'z.io'];
  for (const locale of ['C', 'en_US.UTF-8', 'da_DK.UTF-8', 'lt_LT.UTF-8', 'et_EE.UTF-8']) {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      env: { ...process.env, LANG: locale, LC_ALL: locale },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), expected, `under ${locale}`);
  }
});

test('resourceNames: a rule of their own per name set, after the resource rule without; bad names refused', () => {
  const perms = [
    permission(Secrets, ['get', 'update'], { resourceNames: ['tls', 'app-cfg', 'tls'] }),
    permission(Secrets, ['patch'], { resourceNames: ['app-cfg', 'tls'] }),
    permission(Secrets, ['list', 'watch']),
    permission(Secrets, ['get'], { resourceNames: ['другой'] }),
  ];
  assert.deepEqual(policyRules(perms), [
    { apiGroups: [''], resources: ['secrets'], verbs: ['list', 'watch'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['app-cfg', 'tls'], verbs: ['get', 'update', 'patch'] },
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['другой'], verbs: ['get'] },
  ]);
  // permissions built by hand: names in any order merge; an empty list is refused
  const byHand = (names: string[]) => ({
    group: '',
    resource: 'secrets',
    verbs: ['get'] as const,
    resourceNames: names,
  });
  assert.deepEqual(policyRules([byHand(['b', 'a']), byHand(['a', 'b', 'a'])]), [
    { apiGroups: [''], resources: ['secrets'], resourceNames: ['a', 'b'], verbs: ['get'] },
  ]);
  assert.throws(
    () => policyRules([byHand([])]),
    (e) => e instanceof UsageError && /empty resourceNames/.test(e.message),
  );
  for (const [verbs, names, message] of [
    [['create'], ['x'], /cannot limit create to names/],
    [['get', 'deletecollection'], ['x'], /cannot limit deletecollection/],
    [['get'], [], /at least one name/],
    [['get'], [''], /no empty one/],
  ] as const) {
    assert.throws(
      () => permission(Secrets, verbs, { resourceNames: names }),
      (e) => e instanceof UsageError && message.test(e.message) && /permission\(Secret/.test(e.message),
    );
  }
});
