import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byLabel, parseExposition, total } from './scrape.ts';

const TEXT = `# HELP opkit_cache_objects Objects in the cache.
# TYPE opkit_cache_objects gauge
opkit_cache_objects{resource="pods"} 3400
opkit_cache_objects{resource="appservices.app.example.com",note="a \\"quoted\\" value"} 340
opkit_shards_held 11
`;

test('parseExposition reads names, labels (escapes included) and values; total and byLabel sum them', () => {
  const samples = parseExposition(TEXT);
  assert.equal(samples.length, 3);
  assert.equal(samples[1]?.labels.note, 'a "quoted" value');
  assert.equal(total(samples, 'opkit_cache_objects'), 3740);
  assert.equal(total(samples, 'opkit_shards_held'), 11);
  assert.equal(total(samples, 'opkit_shard_members'), undefined);
  assert.deepEqual(byLabel(samples, 'opkit_cache_objects', 'resource'), {
    pods: 3400,
    'appservices.app.example.com': 340,
  });
});
