import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clusterShard, LeaseBook, replicaOf } from './leases.ts';

const SHARD = { 'opkit.dev/shard-role': 'shard' };

test('replicaOf: a leader-election or a sharding identity names its replica; chaos-1 is not chaos-10', () => {
  assert.equal(replicaOf('chaos-1_9b2f', 3), 1);
  assert.equal(replicaOf('chaos-2-ab12c', 3), 2);
  assert.equal(replicaOf('chaos-10-ab12c', 3), undefined);
  assert.equal(replicaOf('someone-else', 3), undefined);
  assert.equal(replicaOf('', 3), undefined);
});

test('LeaseBook: the leader Lease and each fence kept apart, member Leases left out, one entry per change', () => {
  const book = new LeaseBook(2);
  book.observe({ name: 'op-leader', labels: {}, holder: 'chaos-0_a' }, 1);
  book.observe({ name: 'op-leader', labels: {}, holder: 'chaos-0_a' }, 2);
  book.observe({ name: 'op-shard-4', labels: SHARD, holder: 'chaos-1-bbbbb' }, 3);
  book.observe({ name: 'op-member-chaos-0-ccccc', labels: { 'opkit.dev/shard-role': 'member' }, holder: 'x' }, 4);
  book.observe({ name: 'op-shard-4', labels: SHARD, holder: '' }, 5);
  assert.deepEqual(book.leader, [{ identity: 'chaos-0_a', replica: 0, at: 1 }]);
  assert.deepEqual(book.fences.get(4), [
    { identity: 'chaos-1-bbbbb', replica: 1, at: 3 },
    { identity: '', replica: undefined, at: 5 },
  ]);
  assert.equal(book.fences.size, 1);
  assert.equal(book.firstSeen('chaos-1-bbbbb'), 3);
});

test('heldBy: within the slack of the write, by the process that made it; a release is nobody’s', () => {
  const book = new LeaseBook(2);
  book.observe({ name: 'op-shard-0', labels: SHARD, holder: 'chaos-0-aaaaa' }, 1_000);
  book.observe({ name: 'op-shard-0', labels: SHARD, holder: '' }, 5_000);
  const fence = book.fences.get(0) ?? [];
  assert.equal(book.heldBy(fence, 0, 0, 3_000, 1_000), true);
  assert.equal(book.heldBy(fence, 0, 0, 5_500, 1_000), true, 'the watch may see the release late');
  assert.equal(book.heldBy(fence, 0, 0, 7_000, 1_000), false);
  assert.equal(book.heldBy(fence, 0, 2_000, 3_000, 1_000), false, 'an identity of an earlier process');
  assert.equal(book.heldBy(fence, 1, 0, 3_000, 1_000), false);
  assert.equal(LeaseBook.holderAt(fence, 6_000)?.identity, '');
});

test("LeaseBook: a sharded fleet's ring (<ring>-fleet) is kept apart from the objects' ring", () => {
  const book = new LeaseBook(2);
  const ring = (r: string) => ({ ...SHARD, 'opkit.dev/shard-ring': r });
  // an operator whose own name ends in -fleet: its objects' ring is still the one that is no other's -fleet
  book.observe({ name: 'my-fleet-fleet-shard-3', labels: ring('my-fleet-fleet'), holder: 'chaos-1-aaaaa' }, 1);
  book.observe({ name: 'my-fleet-shard-3', labels: ring('my-fleet'), holder: 'chaos-0-bbbbb' }, 2);
  assert.deepEqual(book.fences.get(3), [{ identity: 'chaos-0-bbbbb', replica: 0, at: 2 }]);
  assert.deepEqual(book.fleetFences.get(3), [{ identity: 'chaos-1-aaaaa', replica: 1, at: 1 }]);
  assert.equal(new LeaseBook(1).fleetFences.size, 0);
});

test("clusterShard: the runtime's values (multicluster/spread.test.ts holds its clusterShard to the same)", () => {
  const vectors = { 'member-1': 18, 'member-2': 2, 'eu-1': 19, 'us-1': 26, 'ap-1': 27, 'ünïcode-集群': 28, '': 29 };
  for (const [name, shard] of Object.entries(vectors)) assert.equal(clusterShard(name), shard, name);
});
