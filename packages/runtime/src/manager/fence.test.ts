import assert from 'node:assert/strict';
import { test } from 'node:test';
import { replicaFence } from './fence.ts';
import type { LeaderElector } from './leader.ts';

/** An elector that leads or not, and whose check refuses when its Lease is stale. */
function elector(state: { leading: boolean; fresh: boolean }): LeaderElector {
  return {
    get isLeader() {
      return state.leading;
    },
    check() {
      if (!state.leading || !state.fresh) throw new DOMException('not leading', 'AbortError');
    },
  } as unknown as LeaderElector;
}

test('the replica fence: none without leader election or sharding; the Lease asked otherwise', () => {
  assert.equal(replicaFence({ sharding: undefined, leaderElection: false, elector: () => undefined }), undefined);
  const state = { leading: true, fresh: true };
  const fence = replicaFence({ sharding: undefined, leaderElection: true, elector: () => elector(state) });
  assert.doesNotThrow(() => fence?.());
  state.fresh = false;
  assert.throws(() => fence?.(), /not leading/);
  const before = replicaFence({ sharding: undefined, leaderElection: true, elector: () => undefined });
  assert.throws(() => before?.(), /not started/);
  let asked = 0;
  const sharded = replicaFence({
    sharding: { check: () => void asked++ },
    leaderElection: true,
    elector: () => undefined,
  });
  sharded?.();
  assert.equal(asked, 1, 'sharding asks the member Lease');
});
