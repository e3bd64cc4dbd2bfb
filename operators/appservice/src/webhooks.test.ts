import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultMaxUnavailable, imageRepository, registryAllowed } from './webhooks.ts';

test('image references resolve with Docker defaults', () => {
  assert.deepEqual(imageRepository('nginx'), { repository: 'docker.io/library/nginx', tag: undefined, digest: false });
  assert.deepEqual(imageRepository('nginx:1.27'), {
    repository: 'docker.io/library/nginx',
    tag: '1.27',
    digest: false,
  });
  assert.deepEqual(imageRepository('team/app:v1').repository, 'docker.io/team/app');
  assert.deepEqual(imageRepository('registry.example.com:5000/a/b:2'), {
    repository: 'registry.example.com:5000/a/b',
    tag: '2',
    digest: false,
  });
  assert.deepEqual(imageRepository('localhost/app').repository, 'localhost/app');
  assert.equal(imageRepository('ghcr.io/x/y@sha256:abc').digest, true);
});

test('allowed registries are path prefixes, not string prefixes', () => {
  assert.equal(registryAllowed('registry.example.com/team/app', 'registry.example.com'), true);
  assert.equal(registryAllowed('registry.example.com.evil.net/app', 'registry.example.com'), false);
  assert.equal(registryAllowed('docker.io/library/nginx', ' ghcr.io , docker.io/library/ '), true);
  assert.equal(registryAllowed('docker.io/team/app', 'docker.io/library'), false);
  assert.equal(registryAllowed('docker.io/team/app', ''), false);
});

test('maxUnavailable defaults to a quarter of the replicas, at least 1', () => {
  assert.deepEqual([0, 1, 4, 7, 8, 100].map(defaultMaxUnavailable), [1, 1, 1, 1, 2, 25]);
});
