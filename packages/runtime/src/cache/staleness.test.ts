/** The stale-cache judgement with injected times: when a cache behind the apiserver is stale, and when it is not. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../logger.ts';
import { probeStaleness, StalenessJudge, type StaleTarget, type StaleVerdict } from './staleness.ts';

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

/** A reflector as the probe sees it, at `rv`, whose relists change `changes` objects. */
function fakeTarget(changes: number) {
  const t = {
    rv: '100',
    flagged: false,
    suspicions: [] as StaleVerdict[],
    target: {} as StaleTarget,
  };
  t.target = {
    synced: () => true,
    relisting: () => false,
    resourceVersion: () => t.rv,
    suspect: async (v) => {
      t.suspicions.push(v);
      t.rv = String(Number(v.serverResourceVersion) + 1); // relisted: at the list's resourceVersion
      return changes;
    },
    flag: (stale) => {
      t.flagged = stale;
    },
  };
  return t;
}

const until = async (what: string, ok: () => boolean) => {
  for (let i = 0; i < 400 && !ok(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(ok(), what);
};

test('the probe: a relist that changed objects flags the cache until its watch brings it past the relist', async () => {
  const t = fakeTarget(3);
  let server = 200;
  const stop = new AbortController();
  const options = { intervalMs: 2, afterMs: 20 };
  const probing = probeStaleness(
    t.target,
    { read: async () => String(server++), log: silentLogger, options },
    stop.signal,
  );
  await until('suspected', () => t.suspicions.length === 1);
  assert.equal(t.flagged, true, 'the relist changed 3 objects: stale');
  await new Promise((r) => setTimeout(r, 10)); // its watch does not bring it past the relist
  assert.equal(t.flagged, true);
  t.rv = String(Number(t.rv) + 1); // an event or a bookmark: its watch works again
  await until('cleared', () => !t.flagged);
  stop.abort();
  await probing;
});

test('the probe: a relist that changed nothing flags nothing, and the bound doubles (at most 16×)', async () => {
  const t = fakeTarget(0);
  let server = 200;
  const stop = new AbortController();
  const options = { intervalMs: 1, afterMs: 10 };
  const probing = probeStaleness(
    t.target,
    { read: async () => String(server++), log: silentLogger, options },
    stop.signal,
  );
  await until('three suspicions', () => t.suspicions.length >= 3);
  stop.abort();
  await probing;
  assert.equal(t.flagged, false);
  const [a, b, c] = t.suspicions.map((v) => v.behindMs);
  assert.ok(a !== undefined && b !== undefined && c !== undefined);
  assert.ok(b >= 20 && c >= 40, `the bound grew: ${a}, ${b}, ${c} ms`);
});

test('the probe: a failed read judges nothing; it never rejects', async () => {
  const t = fakeTarget(1);
  const stop = new AbortController();
  const read = async (): Promise<string> => {
    throw new Error('connection refused');
  };
  const probing = probeStaleness(
    t.target,
    { read, log: silentLogger, options: { intervalMs: 1, afterMs: 1 } },
    stop.signal,
  );
  await new Promise((r) => setTimeout(r, 30));
  stop.abort();
  await probing;
  assert.deepEqual(t.suspicions, []);
});
