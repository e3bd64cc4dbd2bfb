import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ClusterRole, ClusterRoles, type ConfigMap, ConfigMaps, Namespaces } from '../client/builtins.ts';
import { type KubeObject, resource } from '../client/resource.ts';
import { UsageError } from '../errors.ts';
import {
  controllerOf,
  isControlledBy,
  OwnerReferenceError,
  removeOwnerReference,
  setControllerReference,
  setOwnerReference,
} from './ownerrefs.ts';

interface App extends KubeObject {
  spec?: { replicas?: number };
}
const Apps = resource<App>({
  group: 'app.example.com',
  version: 'v1',
  kind: 'App',
  plural: 'apps',
  namespaced: true,
});
interface Tenant extends KubeObject {}
const Tenants = resource<Tenant>({
  group: 'app.example.com',
  version: 'v1',
  kind: 'Tenant',
  plural: 'tenants',
  namespaced: false,
});

const app = (name = 'web', uid = 'uid-web', namespace = 'prod'): App => ({
  apiVersion: 'app.example.com/v1',
  kind: 'App',
  metadata: { name, namespace, uid },
});
const cm = (namespace?: string): ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: namespace === undefined ? { name: 'web-config' } : { name: 'web-config', namespace },
});
const fails = (fn: () => unknown, code: OwnerReferenceError['code'], pattern: RegExp) =>
  assert.throws(fn, (e) => e instanceof OwnerReferenceError && e.code === code && pattern.test(e.message));

test('setControllerReference adds a controller reference and returns the object', () => {
  const obj = cm('prod');
  const returned = setControllerReference(Apps, app(), obj);
  assert.equal(returned, obj);
  assert.deepEqual(obj.metadata.ownerReferences, [
    {
      apiVersion: 'app.example.com/v1',
      kind: 'App',
      name: 'web',
      uid: 'uid-web',
      controller: true,
      blockOwnerDeletion: true,
    },
  ]);
  assert.deepEqual(controllerOf(obj), obj.metadata.ownerReferences?.[0]);
  assert.equal(isControlledBy(obj, app()), true);
  assert.equal(isControlledBy(obj, app('other', 'uid-other')), false);
  assert.equal(isControlledBy(obj, { metadata: { name: 'web' } }), false, 'an owner without uid controls nothing');
});

test('setControllerReference is idempotent and updates the same uid in place', () => {
  const obj = cm('prod');
  setOwnerReference(Tenants, { metadata: { name: 't', uid: 'uid-t' } }, obj);
  setControllerReference(Apps, app(), obj);
  const once = structuredClone(obj);
  setControllerReference(Apps, app(), obj);
  assert.deepEqual(obj, once);
  assert.equal(obj.metadata.ownerReferences?.length, 2);
  const v2 = resource<App>({ group: 'app.example.com', version: 'v2', kind: 'App', plural: 'apps', namespaced: true });
  setControllerReference(v2, { ...app(), apiVersion: 'app.example.com/v2' }, obj);
  assert.equal(obj.metadata.ownerReferences?.length, 2);
  assert.equal(obj.metadata.ownerReferences?.[1]?.apiVersion, 'app.example.com/v2', 'same position, updated');
});

test('setControllerReference promotes an existing plain reference of the same owner', () => {
  const obj = cm('prod');
  setOwnerReference(Apps, app(), obj);
  assert.equal(controllerOf(obj), undefined);
  setControllerReference(Apps, app(), obj);
  assert.equal(obj.metadata.ownerReferences?.length, 1);
  assert.equal(isControlledBy(obj, app()), true);
});

test('a second controller is AlreadyOwned, naming the existing controller and the object', () => {
  const obj = cm('prod');
  setControllerReference(Apps, app(), obj);
  const before = structuredClone(obj);
  fails(
    () => setControllerReference(Apps, app('api', 'uid-api'), obj),
    'AlreadyOwned',
    /App prod\/api .*ConfigMap prod\/web-config.*already controlled by App\/web \(uid uid-web\)/,
  );
  assert.deepEqual(obj, before, 'a failed call changes nothing');
  setOwnerReference(Apps, app('api', 'uid-api'), obj);
  assert.equal(obj.metadata.ownerReferences?.length, 2, 'another plain owner is fine');
});

test('an owner without uid is MissingUid', () => {
  const owner: App = { metadata: { name: 'web', namespace: 'prod' } };
  fails(() => setControllerReference(Apps, owner, cm('prod')), 'MissingUid', /read from the API first/);
  fails(() => setOwnerReference(Apps, owner, cm('prod')), 'MissingUid', /App prod\/web .*ConfigMap prod\/web-config/);
});

test('a namespaced owner in another namespace is CrossNamespace', () => {
  const obj = cm('staging');
  fails(
    () => setControllerReference(Apps, app(), obj),
    'CrossNamespace',
    /App prod\/web .*ConfigMap staging\/web-config.*cannot cross namespaces/,
  );
  fails(() => setOwnerReference(Apps, app(), obj), 'CrossNamespace', /cannot cross namespaces/);
  assert.equal(obj.metadata.ownerReferences, undefined, 'a failed call changes nothing');
});

test('an object without namespace is placed in the namespaced owner’s namespace', () => {
  const obj = setControllerReference(Apps, app(), cm());
  assert.equal(obj.metadata.namespace, 'prod');
  assert.equal(isControlledBy(obj, app()), true);
  const plain = setOwnerReference(Apps, app(), cm());
  assert.equal(plain.metadata.namespace, 'prod');
});

test('a cluster-scoped object with a namespaced owner is ClusterScopedOwnedByNamespaced when its type is given', () => {
  const role: ClusterRole = { metadata: { name: 'reader' } };
  fails(
    () => setControllerReference(Apps, app(), role, { objectType: ClusterRoles }),
    'ClusterScopedOwnedByNamespaced',
    /App prod\/web .*ClusterRole reader.*cluster-scoped object cannot have a namespaced owner/,
  );
  fails(
    () => setOwnerReference(Apps, app(), role, { objectType: ClusterRoles }),
    'ClusterScopedOwnedByNamespaced',
    /namespaced owner/,
  );
  assert.deepEqual(role, { metadata: { name: 'reader' } }, 'a failed call changes nothing');
  const obj = setControllerReference(Apps, app(), cm(), { objectType: ConfigMaps });
  assert.equal(obj.metadata.namespace, 'prod', 'a namespaced objectType is defaulted as without it');
});

test('a cluster-scoped owner may own namespaced and cluster-scoped objects', () => {
  const tenant: Tenant = { metadata: { name: 'acme', uid: 'uid-acme' } };
  const obj = setControllerReference(Tenants, tenant, cm('anywhere'));
  assert.equal(obj.metadata.namespace, 'anywhere');
  assert.equal(isControlledBy(obj, tenant), true);
  const reader: ClusterRole = { metadata: { name: 'reader' } };
  const role = setControllerReference(Tenants, tenant, reader, { objectType: ClusterRoles });
  assert.equal(role.metadata.namespace, undefined, 'no namespace is invented for a cluster-scoped owner');
  assert.equal(controllerOf(role)?.kind, 'Tenant');
  const ns = setOwnerReference(Namespaces, { metadata: { name: 'team', uid: 'uid-ns' } }, cm('team'));
  assert.equal(ns.metadata.ownerReferences?.[0]?.kind, 'Namespace');
});

test('setOwnerReference adds a plain reference, replaces by uid, and honours blockOwnerDeletion', () => {
  const obj = cm('prod');
  setOwnerReference(Apps, app(), obj);
  assert.deepEqual(obj.metadata.ownerReferences, [
    { apiVersion: 'app.example.com/v1', kind: 'App', name: 'web', uid: 'uid-web', blockOwnerDeletion: false },
  ]);
  setOwnerReference(Apps, app(), obj, { blockOwnerDeletion: true });
  assert.equal(obj.metadata.ownerReferences?.length, 1);
  assert.equal(obj.metadata.ownerReferences?.[0]?.blockOwnerDeletion, true);
  const once = structuredClone(obj);
  setOwnerReference(Apps, app(), obj, { blockOwnerDeletion: true });
  assert.deepEqual(obj, once, 'idempotent');
  setControllerReference(Apps, app(), obj);
  setOwnerReference(Apps, app(), obj);
  assert.equal(controllerOf(obj), undefined, 'replacing the controller reference demotes it');
});

test('an owner of another kind than its resource type is a UsageError', () => {
  assert.throws(
    () => setControllerReference(Apps, { ...app(), kind: 'Other' }, cm('prod')),
    (e) => e instanceof UsageError && /is a Other, not a App/.test(e.message),
  );
});

test('removeOwnerReference removes by uid and reports whether it did', () => {
  const obj = cm('prod');
  const tenant: Tenant = { metadata: { name: 'acme', uid: 'uid-acme' } };
  setControllerReference(Apps, app(), obj);
  setOwnerReference(Tenants, tenant, obj);
  assert.equal(removeOwnerReference(obj, app()), true);
  assert.equal(controllerOf(obj), undefined);
  assert.deepEqual(
    obj.metadata.ownerReferences?.map((r) => r.uid),
    ['uid-acme'],
  );
  assert.equal(removeOwnerReference(obj, app()), false);
  assert.equal(removeOwnerReference(obj, { metadata: { name: 'acme' } }), false, 'no uid, nothing to match');
  assert.equal(removeOwnerReference(obj, tenant), true);
  assert.equal(obj.metadata.ownerReferences, undefined, 'an empty list is removed');
  assert.equal(removeOwnerReference(obj, tenant), false);
});
