import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Lease } from '../client/builtins.ts';
import type { KubeObject } from '../client/resource.ts';
import { SHARD_COUNT, SHARD_LABEL } from '../helpers/shardlabel.ts';
import { FILTER_ANNOTATION } from './labels.ts';
import { fnv1a64 } from './ring.ts';
import { LABELS, SchemeChoice, SERVER, shardRange, uidShard } from './scheme.ts';
import { sameFilter } from './view.ts';

const obj = (uid: string, labels?: Record<string, string>): KubeObject => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name: 'x', namespace: 'n', uid, ...(labels ? { labels } : {}) },
});

test("uidShard is the apiserver's: the top 5 bits of the unmixed 64-bit FNV-1a (values from Go's hash/fnv)", () => {
  assert.equal(fnv1a64('6f1c5a3e-2b7d-4c9a-9e41-0d2f8b7a6c55'), 0xe59d47a40bc88be9n);
  assert.equal(uidShard('6f1c5a3e-2b7d-4c9a-9e41-0d2f8b7a6c55'), 28);
  assert.equal(uidShard(''), 25);
  assert.equal(uidShard('ns/ü'), 14);
});

test('uidShard on 32-bit halves equals the top bits of the BigInt FNV-1a, for any text', () => {
  const texts = ['', 'a', 'ü', '日本', ...Array.from({ length: 2_000 }, () => crypto.randomUUID())];
  for (let i = 0; i < 500; i++)
    texts.push(String.fromCodePoint(...Array.from({ length: i % 40 }, () => Math.floor(Math.random() * 0x2ffff))));
  for (const t of texts) assert.equal(uidShard(t), Number(fnv1a64(t) >> 59n), JSON.stringify(t));
});

test('shardRange: 16-digit bounds, the last up to 2^64, the ranges tiling the hash space', () => {
  assert.equal(shardRange(0), "shardRange(object.metadata.uid, '0x0000000000000000', '0x0800000000000000')");
  assert.equal(shardRange(31), "shardRange(object.metadata.uid, '0xf800000000000000', '0x10000000000000000')");
  for (let b = 0; b + 1 < SHARD_COUNT; b++)
    assert.equal(shardRange(b).split("'")[3], shardRange(b + 1).split("'")[1], `shard ${b} ends where ${b + 1} starts`);
});

test('random uids spread over the shards', () => {
  const counts = new Array(SHARD_COUNT).fill(0);
  for (let i = 0; i < 3_200; i++) counts[uidShard(crypto.randomUUID())] += 1;
  assert.ok(Math.min(...counts) > 50 && Math.max(...counts) < 160, `counts ${counts.join(',')}`);
});

test('server: a primary by its uid, a child by its u-label; each partition has exactly the objects put there', () => {
  const uid = crypto.randomUUID();
  const b = uidShard(uid);
  const owner = obj(uid, { [SHARD_LABEL]: String((b + 1) % SHARD_COUNT) }); // a label left by the labels filter
  assert.equal(SERVER.shardOf(owner), b);
  assert.equal(SERVER.partitioning('primary').has(owner, String(b)), true);
  assert.equal(SERVER.partitioning('primary').has(owner, String((b + 1) % SHARD_COUNT)), false);
  const child = obj(crypto.randomUUID(), { [SHARD_LABEL]: SERVER.labelValue(b) });
  assert.equal(SERVER.childShardOf(child), b);
  assert.equal(SERVER.partitioning('owned').has(child, String(b)), true);
  assert.deepEqual(SERVER.partitioning('owned').selectors(String(b)), { labelSelector: `${SHARD_LABEL}=u${b}` });
  assert.deepEqual(SERVER.partitioning('primary').selectors(String(b)), { shardSelector: shardRange(b) });
  // the two filters' label values are disjoint: each sees the other's children as unlabelled
  assert.equal(LABELS.childShardOf(child), undefined);
  assert.equal(SERVER.childShardOf(obj('c', { [SHARD_LABEL]: '7' })), undefined);
  assert.ok(SERVER.unlabelled.includes('u31') && !SERVER.unlabelled.includes('(0,'));
  assert.equal(SERVER.primariesMove, false);
  assert.equal(LABELS.primariesMove, true);
});

test('SchemeChoice: partitioning follows the filter decided; labels where asked, where the key is the namespace, where not served, or where a kind is both', async () => {
  let serves = true;
  let fails = 0;
  const client = {
    async *listPages(kind: { kind: string }, options: { namespace?: string; shardSelector?: string }) {
      assert.equal(kind.kind, 'Lease');
      assert.equal(options.namespace, 'n');
      if (fails-- > 0) throw new Error('connection refused');
      yield { items: [], metadata: { resourceVersion: '1', ...(serves ? { shardInfo: { selector: '…' } } : {}) } };
    },
  } as never;
  const warned: string[] = [];
  const log = { warn: (_: unknown, msg: string) => warned.push(msg) } as never;
  const c = { client, namespace: 'n', log, signal: new AbortController().signal };
  const kind = { group: 'g', version: 'v1', kind: 'W', plural: 'ws', namespaced: true, apiVersion: 'g/v1' } as never;
  const choice = new SchemeChoice();
  const by = choice.partitioning('primary', kind);
  assert.equal(choice.partitioning('primary', kind), by, 'one partitioning per kind');
  assert.deepEqual(by.selectors('3'), { labelSelector: `${SHARD_LABEL}=3` });
  assert.equal((await choice.decide('labels', 'name', c)).filter, 'labels');
  assert.equal((await choice.decide('auto', 'namespace', c)).filter, 'labels');
  serves = false;
  assert.equal((await choice.decide('auto', 'name', c)).filter, 'labels', 'not served: labels');
  await assert.rejects(choice.decide('server', 'name', c), /does not serve shard selectors/);
  serves = true;
  fails = 1;
  assert.equal((await choice.decide('auto', 'name', c)).filter, 'server', 'served, after a failure asked again');
  assert.equal(warned.length, 1);
  assert.deepEqual(by.selectors('3'), { shardSelector: shardRange(3) });
  choice.partitioning('owned', kind);
  assert.equal((await choice.decide('auto', 'name', c)).filter, 'labels');
  await assert.rejects(choice.decide('server', 'name', c), /both a primary and an owned kind/);
});

test('sameFilter: labels leads while any live member uses it (no annotation: labels); else every server member', () => {
  const lease = (id: string, filter?: string): Lease => ({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: `r-member-${id}`, ...(filter ? { annotations: { [FILTER_ANNOTATION]: filter } } : {}) },
    spec: { holderIdentity: id },
  });
  const members = [lease('a', 'server'), lease('b', 'server'), lease('old'), lease('c', 'labels')];
  assert.deepEqual(sameFilter(['a', 'b'], members, 'a', 'server'), ['a', 'b']);
  assert.deepEqual(sameFilter(['a', 'b', 'c'], members, 'a', 'server'), ['c']);
  assert.deepEqual(sameFilter(['a', 'b', 'c'], members, 'c', 'labels'), ['c']);
  assert.deepEqual(sameFilter(['a', 'old'], members, 'a', 'server'), ['old'], 'a member without the annotation');
  assert.deepEqual(sameFilter(['a', 'b'], [lease('b')], 'a', 'server'), ['b'], 'a member without the annotation leads');
});

test("the apiserver's unmixed hash of similar namespace names: 64 of them in 2 shards (why server needs key name)", () => {
  const shards = new Set(Array.from({ length: 64 }, (_, i) => uidShard(`team-${i}`)));
  assert.equal(shards.size, 2);
});
