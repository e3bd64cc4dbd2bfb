/** The stale-cache judgement with injected times: when a cache behind the apiserver is stale, and when it is not. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StalenessJudge } from './staleness.ts';

test('a cache that reaches what the apiserver had within the bound is never stale, however far behind it is now', () => {
  const j = new StalenessJudge(90_000);
  j.observe(0, '100');
  assert.equal(j.verdict(30_000, '90'), undefined, 'behind, but for 30 s only');
  j.observe(30_000, '200');
  assert.equal(j.verdict(60_000, '150'), undefined, 'reached 100 (observed at 0); 200 is 30 s old');
  j.observe(60_000, '300');
  assert.equal(j.verdict(140_000, '250'), undefined, 'reached 200; 300 is 80 s old');
  assert.deepEqual(j.verdict(150_000, '250'), {
    cacheResourceVersion: '250',
    serverResourceVersion: '300',
    behindMs: 90_000,
  });
});

test('a cache stuck at one resourceVersion is stale once the oldest one it has not reached is old enough', () => {
  const j = new StalenessJudge(90_000);
  for (let t = 0; t <= 60_000; t += 30_000) j.observe(t, String(1000 + t));
  assert.equal(j.verdict(89_999, '999'), undefined);
  assert.equal(j.verdict(90_000, '999')?.serverResourceVersion, '1000');
  j.reset();
  assert.equal(j.verdict(200_000, '999'), undefined, 'after a relist, nothing is judged until observed again');
  j.observe(200_000, '5000');
  j.observe(210_000, '4000'); // an older answer (another apiserver behind a load balancer) changes nothing
  assert.equal(j.verdict(290_000, '4999')?.serverResourceVersion, '5000');
});

test('resourceVersions that are not decimal integers cannot be compared: nothing is judged', () => {
  const j = new StalenessJudge(1);
  j.observe(0, 'a1b2');
  assert.equal(j.incomparable, true);
  const k = new StalenessJudge(1);
  k.observe(0, '10');
  assert.equal(k.verdict(10, 'x'), undefined);
  assert.equal(k.incomparable, true);
  assert.equal(new StalenessJudge(1).verdict(10, undefined), undefined, 'not listed yet');
});
