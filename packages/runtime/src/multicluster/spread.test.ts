import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ShardCoordinator, ShardHost } from '../sharding/coordinator.ts';
import { clusterShard, FleetSpread } from './spread.ts';

/** A coordinator stand-in: `fresh` is whether its member Lease is fresh. */
function spreadWith(reconciled: string[], stopping: Promise<void> = Promise.resolve()) {
  const state = { fresh: true, host: undefined as ShardHost | undefined };
  const coordinator = {
    check: () => {
      if (!state.fresh) throw new DOMException('sharding: the member Lease is not fresh', 'AbortError');
    },
    run: async () => {},
  } as unknown as ShardCoordinator;
  const spread = new FleetSpread(
    (host) => {
      state.host = host;
      return coordinator;
    },
    {
      drainMs: 100,
      reconcile: async () => {
        reconciled.push(spread.held.join(','));
        await stopping;
      },
    },
  );
  return { spread, state };
}

test('clusterShard: the hash of the name (chaos/leases.test.ts in testenv holds its copy to the same values)', () => {
  const vectors = { 'member-1': 18, 'member-2': 2, 'eu-1': 19, 'us-1': 26, 'ap-1': 27, 'ünïcode-集群': 28, '': 29 };
  for (const [name, shard] of Object.entries(vectors)) assert.equal(clusterShard(name), shard, name);
});

test('a member runs here only while its shard is held; its writes are fenced by the shard and the member Lease', async () => {
  const reconciled: string[] = [];
  const { spread, state } = spreadWith(reconciled);
  const fence = spread.fence('eu-1');
  assert.equal(spread.owns('eu-1'), false);
  assert.throws(fence, { name: 'AbortError', message: /shard of cluster eu-1 is not held here/ });

  assert.equal(await state.host?.acquire(19, new AbortController().signal), true);
  assert.equal(spread.owns('eu-1'), true);
  assert.equal(spread.owns('us-1'), false, 'another shard');
  fence();
  state.fresh = false;
  assert.throws(
    fence,
    { name: 'AbortError', message: /member Lease is not fresh/ },
    'a stale member Lease fences first',
  );
  state.fresh = true;

  // a hand-off: writes refused from its start, resolved once the fleet has reconciled (its members stopped)
  await state.host?.acquire(26, new AbortController().signal);
  await state.host?.release(19);
  assert.throws(fence);
  assert.equal(spread.owns('us-1'), true);
  state.host?.lose();
  assert.deepEqual(spread.held, []);
  assert.throws(spread.fence('us-1'));
  assert.deepEqual(reconciled, ['19', '19,26', '26', '']);

  const aborted = new AbortController();
  aborted.abort();
  assert.equal(await state.host?.acquire(2, aborted.signal), false, 'an aborted acquire takes nothing');
  assert.equal(spread.owns('member-2'), false);
});

test("a hand-off waits for its members' stop at most the drain time (+1 s); a hand-off now does not wait", async () => {
  const { state } = spreadWith([], new Promise<void>(() => {})); // members that never stop
  await state.host?.acquire(19, new AbortController().signal);
  const started = Date.now();
  await state.host?.release(19, true);
  assert.ok(Date.now() - started < 50, 'now: at once');
  await state.host?.acquire(19, new AbortController().signal);
  const bounded = Date.now();
  await state.host?.release(19);
  const took = Date.now() - bounded;
  assert.ok(took >= 1_000 && took < 2_000, `bounded by the drain time + 1 s (took ${took} ms)`);
});
