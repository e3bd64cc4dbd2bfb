import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps, Secrets } from '../client/builtins.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { Cache } from './cache.ts';

test("mayHold: only objects of a watched namespace that match the resource's label selector", () => {
  const client = offlineClient('a');
  const cache = new Cache({ client, namespaces: ['a', 'b'], byResource: { secrets: { labelSelector: 'app=web' } } });
  const cm = (namespace: string, labels?: Record<string, string>) => ({
    metadata: { name: 'x', namespace, ...(labels ? { labels } : {}) },
  });
  const configMaps = cache.informer(ConfigMaps);
  assert.equal(configMaps.mayHold(cm('a')), true);
  assert.equal(configMaps.mayHold(cm('c')), false, 'a namespace the cache does not watch');
  const secrets = cache.informer(Secrets);
  assert.equal(secrets.mayHold(cm('b', { app: 'web' })), true);
  assert.equal(secrets.mayHold(cm('b', { app: 'db' })), false, 'outside the selector');
  assert.equal(secrets.mayHold(cm('b')), false);
  assert.equal(new Cache({ client }).informer(ConfigMaps).mayHold(cm('anywhere')), true, 'every namespace');
  client.close();
});
