/**
 * The cache's informer lifetimes without a control plane (nothing started): holds counted, kept-for-good informers
 * never stopped, readiness blind to held ones, typed indexes back on an informer made again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigMaps, Secrets } from '../client/builtins.ts';
import { offlineClient } from '../client/offline.fixture.ts';
import { metadataOnly } from '../client/resource.ts';
import { Cache } from './cache.ts';
import { defineIndex } from './indexes.ts';

const kinds = (cache: Cache) =>
  cache.informers().map((i) => i.resource.plural + (i.resource.metadataOnly ? ' (metadata)' : ''));

test('a held informer stops when its last hold is released; one kept for good (a watch, a read) never does', async () => {
  const client = offlineClient();
  const cache = new Cache({ client });
  const a = cache.hold(Secrets);
  const b = cache.hold(Secrets);
  assert.equal(a.informer, b.informer, 'one informer per kind');
  assert.deepEqual(kinds(cache), ['secrets']);
  assert.deepEqual(cache.unsynced(), [], 'readiness does not wait for a held informer');
  assert.equal(cache.synced, true);
  await a.release();
  await a.release(); // a second release of the same hold counts once
  assert.deepEqual(kinds(cache), ['secrets'], 'still held by b');
  await b.release();
  assert.deepEqual(kinds(cache), [], 'the last hold released: stopped and dropped');

  const c = cache.hold(ConfigMaps);
  const kept = cache.informer(ConfigMaps); // a static watch of the same kind keeps it for good
  assert.equal(kept, c.informer);
  await c.release();
  assert.deepEqual(kinds(cache), ['configmaps']);
  assert.deepEqual(cache.unsynced(), [kept], 'kept for good: readiness waits for it');
  const d = cache.hold(ConfigMaps);
  await d.release();
  assert.deepEqual(kinds(cache), ['configmaps'], 'a hold on an informer kept for good releases nothing');
  client.close();
});

test('a kind and its metadata-only form are held apart; an informer made again gets its typed indexes back', async () => {
  const client = offlineClient();
  const cache = new Cache({ client });
  const full = cache.hold(Secrets);
  const meta = cache.hold(metadataOnly(Secrets));
  assert.notEqual(full.informer as unknown, meta.informer as unknown);
  const byType = defineIndex(Secrets, 'by-type', (s) => (s.type ? [s.type] : []));
  cache.addIndex(byType);
  await full.release();
  assert.deepEqual(kinds(cache), ['secrets (metadata)'], 'an index registered on a held informer does not keep it');
  const again = cache.hold(Secrets);
  assert.equal(again.informer.store.hasIndex('by-type'), true);
  await Promise.all([again.release(), meta.release()]);
  assert.deepEqual(kinds(cache), []);
  client.close();
});
