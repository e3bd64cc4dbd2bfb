import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseBook, replicaOf } from './leases.ts';

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
