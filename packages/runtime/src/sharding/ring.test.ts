import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assignShards, SHARD_COUNT, shardOf, shardOfLabel } from './ring.ts';

const members = (n: number) => Array.from({ length: n }, (_, i) => `operator-7d9f-${i}-x${i * 7}`);
const counts = (owners: readonly string[]) => {
  const c = new Map<string, number>();
  for (const o of owners) c.set(o, (c.get(o) ?? 0) + 1);
  return c;
};
const moved = (a: readonly string[], b: readonly string[]) => a.filter((o, i) => o !== b[i]).length;

test('every shard has one owner, and the split is even within one shard', () => {
  for (let n = 1; n <= 12; n++) {
    const owners = assignShards(members(n));
    assert.equal(owners.length, SHARD_COUNT);
    const c = counts(owners);
    assert.equal(c.size, n, `${n} members all own shards`);
    assert.ok(Math.max(...c.values()) - Math.min(...c.values()) <= 1, `${n}: ${[...c.values()]}`);
  }
  assert.deepEqual(assignShards([]), []);
});

test('the owners depend only on the set of members, not their order or duplicates', () => {
  const m = members(5);
  const owners = assignShards(m);
  assert.deepEqual(assignShards([...m].reverse()), owners);
  assert.deepEqual(assignShards([...m, m[2] ?? '']), owners);
});

test('a join or a leave moves few more shards than the ones that must move', () => {
  for (let n = 2; n <= 8; n++) {
    const before = assignShards(members(n));
    const joined = assignShards(members(n + 1));
    const must = Math.floor(SHARD_COUNT / (n + 1));
    assert.ok(moved(before, joined) <= must + 5, `${n}→${n + 1} moved ${moved(before, joined)}, must ${must}`);
    const left = assignShards(members(n + 1).filter((_, i) => i !== 1));
    const lost = counts(joined).get(members(n + 1)[1] ?? '') ?? 0;
    assert.ok(moved(joined, left) <= lost + 5, `a leave moved ${moved(joined, left)}, must ${lost}`);
  }
});

test('names that differ only at the end spread over the shards (the hash is mixed)', () => {
  const c = new Map<number, number>();
  for (let i = 0; i < 3_200; i++) {
    const b = shardOf(`default/web-${i}`);
    assert.ok(Number.isInteger(b) && b >= 0 && b < SHARD_COUNT);
    c.set(b, (c.get(b) ?? 0) + 1);
  }
  assert.equal(c.size, SHARD_COUNT);
  for (const [b, n] of c) assert.ok(n > 60 && n < 140, `shard ${b} has ${n} of 3200 (100 expected)`);
  assert.notEqual(shardOf('ns/web-1'), undefined);
  assert.equal(shardOf('ns/wéb-ü'), shardOf('ns/wéb-ü'), 'deterministic on non-ASCII');
});

test('a label names a shard only as a canonical number below 32', () => {
  assert.equal(shardOfLabel('0'), 0);
  assert.equal(shardOfLabel('31'), 31);
  for (const bad of [undefined, '', '32', '007', '-1', '1.0', ' 1', 'x', '99'])
    assert.equal(shardOfLabel(bad), undefined);
});
