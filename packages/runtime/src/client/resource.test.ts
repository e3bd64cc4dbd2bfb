import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps, Pods } from './builtins.ts';
import { acceptOf, metadataOnly, resourceId } from './resource.ts';

test('metadataOnly keeps the kind (same resource, same RBAC) and asks for PartialObjectMetadata', () => {
  const meta = metadataOnly(Pods);
  assert.deepEqual(
    { group: meta.group, version: meta.version, kind: meta.kind, plural: meta.plural, namespaced: meta.namespaced },
    { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true },
  );
  assert.equal(resourceId(meta), resourceId(Pods));
  assert.equal(meta.metadataOnly, true);
  assert.ok(Object.isFrozen(meta));
  assert.equal(acceptOf(meta), 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');
  assert.equal(acceptOf(meta, true), 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1');
  assert.equal(acceptOf(ConfigMaps), 'application/json');
  assert.equal(acceptOf(ConfigMaps, true), 'application/json');
  assert.equal(metadataOnly(meta).metadataOnly, true, 'idempotent');
});
