import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease, Pod } from '@opkit/runtime/kinds';
import { uidShard } from '@opkit/runtime/sharding';
import type { AppService } from '../src/api/v1alpha1/appservice.ts';
import { BUCKETS, fenceName, memberName } from './fences.ts';
import { heldBy, identityOf, metric, parseMetrics, ringOf, ringProblems, shardLabelProblems } from './ring.ts';

const NOW = Date.parse('2026-03-01T10:00:00Z');
const labels = (role: string) => ({ 'opkit.dev/shard-ring': 'appservice-operator', 'opkit.dev/shard-role': role });
const member = (id: string, renewedAgoS: number): Lease => ({
  metadata: { name: memberName(id), labels: labels('member') },
  spec: { holderIdentity: id, leaseDurationSeconds: 15, renewTime: new Date(NOW - renewedAgoS * 1000).toISOString() },
});
const fence = (b: number, holder: string): Lease => ({
  metadata: { name: fenceName(b), labels: labels('shard') },
  spec: { holderIdentity: holder },
});
/** Buckets dealt round-robin to `ids`. */
const fences = (ids: readonly string[]) =>
  Array.from({ length: BUCKETS }, (_, b) => fence(b, ids[b % ids.length] ?? ''));

test('ringOf / identityOf: the live member of each replica is its latest renewed one', () => {
  const view = ringOf([member('chaos-a-aaaaa', 20), member('chaos-a-bbbbb', 1), ...fences(['chaos-a-aaaaa'])], NOW);
  assert.equal(identityOf(view, 'chaos-a'), 'chaos-a-bbbbb');
  assert.equal(identityOf(view, 'chaos-b'), undefined);
  assert.equal(heldBy(view, 'chaos-a-aaaaa').length, BUCKETS);
  assert.deepEqual(view.unlabelled, []);
  const bare = ringOf([{ metadata: { name: fenceName(0) }, spec: { holderIdentity: 'x' } }], NOW);
  assert.deepEqual(bare.unlabelled, [fenceName(0)]);
});

test('ringProblems: settled when every replica is a live member holding buckets and holds every bucket', () => {
  const ids = ['chaos-a-aaaaa', 'chaos-b-bbbbb', 'chaos-c-ccccc'];
  const members = ids.map((id) => member(id, 1));
  assert.deepEqual(ringProblems(ringOf([...members, ...fences(ids)], NOW), ['chaos-a', 'chaos-b', 'chaos-c']), []);
  // chaos-c died: its lease ran out, its buckets are still fenced to it
  const dead = ringOf(
    [member(ids[0] as string, 1), member(ids[1] as string, 1), member(ids[2] as string, 16), ...fences(ids)],
    NOW,
  );
  const p = ringProblems(dead, ['chaos-a', 'chaos-b', 'chaos-c']);
  assert.equal(p[0], 'chaos-c is no live member');
  assert.match(p[1] ?? '', /^buckets not held by a live member: 2: chaos-c-ccccc, 5: chaos-c-ccccc/);
  // a live member that holds nothing, and a released bucket
  const idle = ringOf([...members, ...fences(ids.slice(0, 2)).map((f, b) => (b === 7 ? fence(7, '') : f))], NOW);
  assert.deepEqual(ringProblems(idle, ['chaos-a', 'chaos-b', 'chaos-c']), [
    'buckets not held by a live member: 7: ""',
    'chaos-c (chaos-c-ccccc) holds no bucket',
  ]);
});

test('parseMetrics / metric: samples summed over label sets, filtered by labels', () => {
  const text = [
    '# HELP opkit_shards_held Buckets held.',
    '# TYPE opkit_shards_held gauge',
    'opkit_shards_held 11',
    'opkit_shard_handoffs_total{direction="acquired"} 14',
    'opkit_shard_handoffs_total{direction="released"} 3',
    'opkit_cache_objects{resource="pods"} 20',
    'opkit_cache_objects{resource="appservices.app.example.com"} 4',
    '',
  ].join('\n');
  const s = parseMetrics(text);
  assert.equal(metric(s, 'opkit_shards_held'), 11);
  assert.equal(metric(s, 'opkit_shard_handoffs_total', { direction: 'released' }), 3);
  assert.equal(metric(s, 'opkit_cache_objects'), 24);
  assert.equal(metric(s, 'opkit_shard_members'), undefined);
});

test('shardLabelProblems: an AppService without a bucket, a pod in another bucket than its owner', () => {
  const app = (name: string, shard?: string): AppService => ({
    metadata: { name, uid: `u-${name}`, ...(shard ? { labels: { 'opkit.dev/shard': shard } } : {}) },
    spec: { replicas: 1, image: 'busybox' },
  });
  const pod = (name: string, owner: string, shard?: string): Pod => ({
    metadata: {
      name,
      ownerReferences: [{ apiVersion: 'v1', kind: 'AppService', name: owner, uid: `u-${owner}`, controller: true }],
      ...(shard ? { labels: { 'opkit.dev/shard': shard } } : {}),
    },
  });
  const apps = [app('a', '3'), app('b'), app('c', '32')];
  const v = shardLabelProblems(apps, [pod('a-1', 'a', '3'), pod('a-2', 'a', '4'), pod('b-1', 'b')]);
  assert.deepEqual(
    v.map((x) => x.detail),
    [
      'AppService b: opkit.dev/shard=(none)',
      'AppService c: opkit.dev/shard=32',
      'pod a-2: opkit.dev/shard=4, its AppService a is in 3',
    ],
  );
  // server: the AppService's bucket is its uid's hash, and it carries no label; its pods carry u<bucket>
  const b = uidShard('u-a');
  const server = shardLabelProblems(
    [app('a'), app('d', '3')],
    [pod('a-1', 'a', `u${b}`), pod('a-2', 'a', String(b)), pod('a-3', 'a')],
    'server',
  );
  assert.deepEqual(
    server.map((x) => x.detail),
    [
      'AppService d: opkit.dev/shard=3',
      `pod a-2: opkit.dev/shard=${b}, its AppService a is in u${b}`,
      `pod a-3: opkit.dev/shard=(none), its AppService a is in u${b}`,
    ],
  );
});
