import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assignBuckets, bucketOf, bucketOfLabel, SHARD_BUCKETS } from './ring.ts';

const members = (n: number) => Array.from({ length: n }, (_, i) => `operator-7d9f-${i}-x${i * 7}`);
const counts = (owners: readonly string[]) => {
  const c = new Map<string, number>();
  for (const o of owners) c.set(o, (c.get(o) ?? 0) + 1);
  return c;
};
const moved = (a: readonly string[], b: readonly string[]) => a.filter((o, i) => o !== b[i]).length;

test('every bucket has one owner, and the split is even within one bucket', () => {
  for (let n = 1; n <= 12; n++) {
    const owners = assignBuckets(members(n));
    assert.equal(owners.length, SHARD_BUCKETS);
    const c = counts(owners);
    assert.equal(c.size, n, `${n} members all own buckets`);
    assert.ok(Math.max(...c.values()) - Math.min(...c.values()) <= 1, `${n}: ${[...c.values()]}`);
  }
  assert.deepEqual(assignBuckets([]), []);
});

test('the owners depend only on the set of members, not their order or duplicates', () => {
  const m = members(5);
  const owners = assignBuckets(m);
  assert.deepEqual(assignBuckets([...m].reverse()), owners);
  assert.deepEqual(assignBuckets([...m, m[2] ?? '']), owners);
});

test('a join or a leave moves few more buckets than the ones that must move', () => {
  for (let n = 2; n <= 8; n++) {
    const before = assignBuckets(members(n));
    const joined = assignBuckets(members(n + 1));
    const must = Math.floor(SHARD_BUCKETS / (n + 1));
    assert.ok(moved(before, joined) <= must + 5, `${n}→${n + 1} moved ${moved(before, joined)}, must ${must}`);
    const left = assignBuckets(members(n + 1).filter((_, i) => i !== 1));
    const lost = counts(joined).get(members(n + 1)[1] ?? '') ?? 0;
    assert.ok(moved(joined, left) <= lost + 5, `a leave moved ${moved(joined, left)}, must ${lost}`);
  }
});

test('names that differ only at the end spread over the buckets (the hash is mixed)', () => {
  const c = new Map<number, number>();
  for (let i = 0; i < 3_200; i++) {
    const b = bucketOf(`default/web-${i}`);
    assert.ok(Number.isInteger(b) && b >= 0 && b < SHARD_BUCKETS);
    c.set(b, (c.get(b) ?? 0) + 1);
  }
  assert.equal(c.size, SHARD_BUCKETS);
  for (const [b, n] of c) assert.ok(n > 60 && n < 140, `bucket ${b} has ${n} of 3200 (100 expected)`);
  assert.notEqual(bucketOf('ns/web-1'), undefined);
  assert.equal(bucketOf('ns/wéb-ü'), bucketOf('ns/wéb-ü'), 'deterministic on non-ASCII');
});

test('a label names a bucket only as a canonical number below 32', () => {
  assert.equal(bucketOfLabel('0'), 0);
  assert.equal(bucketOfLabel('31'), 31);
  for (const bad of [undefined, '', '32', '007', '-1', '1.0', ' 1', 'x', '99'])
    assert.equal(bucketOfLabel(bad), undefined);
});
