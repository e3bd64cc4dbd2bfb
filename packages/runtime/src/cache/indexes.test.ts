/**
 * `fieldIndex`: the values an object is found under (a string, a list's strings, nothing for '' or a missing or
 * non-string field), one handle per kind and path, and a name another index function holds refused by the cache.
 */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps, type Pod, Pods } from '../client/builtins.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { Cache } from './cache.ts';
import { defineIndex, fieldIndex, IndexError } from './indexes.ts';

test('fieldIndex finds an object under its string field, or each string of a list', () => {
  const byNode = fieldIndex(Pods, 'spec.nodeName');
  const pod = (spec: Pod['spec']): Pod => ({ metadata: { name: 'p' }, ...(spec ? { spec } : {}) });
  assert.deepEqual(byNode.fn(pod({ containers: [], nodeName: 'node-1' })), ['node-1']);
  assert.deepEqual(byNode.fn(pod({ containers: [], nodeName: '' })), []);
  assert.deepEqual(byNode.fn(pod({ containers: [] })), []);
  assert.deepEqual(byNode.fn(pod(undefined)), []);
  const byFinalizer = fieldIndex(ConfigMaps, 'metadata.finalizers');
  assert.deepEqual(byFinalizer.fn({ metadata: { finalizers: ['a', '', 'b'] } }), ['a', 'b']);
  assert.equal(byNode.name, 'spec.nodeName');
  assert.equal(fieldIndex(Pods, 'spec.nodeName'), byNode);
});

test('the cache registers a field index once, and refuses another function under its name', () => {
  const client = offlineClient();
  const cache = new Cache({ client });
  cache.addIndex(fieldIndex(Pods, 'spec.hostname'));
  cache.addIndex(fieldIndex(Pods, 'spec.hostname'));
  assert.throws(
    () => cache.addIndex(defineIndex(Pods, 'spec.hostname', () => [])),
    (err) => err instanceof IndexError && err.code === 'IndexConflict' && /spec\.hostname/.test(err.message),
  );
  client.close();
});
