import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseBook } from './leases.ts';
import type { ReplicaExit } from './replicas.ts';
import type { ChaosSystem, OperatorWrite } from './system.ts';
import { crashLoops, eventsWhileQuiet, leaderOnly, sameObjects, shardOwnerOnly, tokensLogged } from './verdicts.ts';

const NS = 'chaos-1';
const write = (replica: number, at: number): OperatorWrite => ({
  replica,
  at,
  info: { verb: 'create', resource: 'pods', namespace: NS },
});
const exit = (at: number, caused: boolean): ReplicaExit => ({ code: 1, signal: null, at, caused, tail: ['boom'] });

/** The parts of a system the verdicts read; `leases` as a watch saw them: `[name, holder, at]`. */
function system(
  writes: OperatorWrite[],
  leases: [string, string, number][],
  exits: ReplicaExit[][] = [[], []],
  starts: number[][] = exits.map(() => [0]),
): ChaosSystem {
  const replicas = exits.map((e, i) => ({ spec: { name: `chaos-${i}` }, starts: starts[i], exits: e }));
  const book = new LeaseBook(replicas.length);
  for (const [name, holder, at] of leases) {
    const labels: Record<string, string> = name.includes('-shard-') ? { 'opkit.dev/shard-role': 'shard' } : {};
    book.observe({ name, labels, holder }, at);
  }
  return { writes, leases: book, holders: book.leader, replicas } as unknown as ChaosSystem;
}

test('leader-only: a write by the holder passes, also just before the watch saw its takeover; a deposed leader fails', () => {
  const holders: [string, string, number][] = [
    ['op-leader', 'chaos-0_a', 1_000],
    ['op-leader', 'chaos-1_b', 20_000],
  ];
  const writes = [write(0, 5_000), write(1, 19_995), write(0, 27_000), write(1, 30_000)];
  const found = leaderOnly(system(writes, holders), NS, 0);
  assert.equal(found.length, 1);
  assert.equal(found[0]?.object, 'chaos-0');
  assert.match(
    found[0]?.message ?? '',
    /chaos-0 wrote \(create pods in chaos-1\) at .* while it did not hold the Lease \(chaos-1_b did\)/,
  );
  assert.deepEqual(
    leaderOnly(
      system([{ ...write(0, 27_000), info: { verb: 'update', resource: 'leases', namespace: NS } }], holders),
      NS,
      0,
    ),
    [],
    'a Lease write is not state',
  );
});

test('shard-owner-only: each write is judged against the fence of its object’s shard, for the process that made it', () => {
  const at = (replica: number, when: number, name: string): OperatorWrite => ({
    replica,
    at: when,
    info: { verb: 'patch', resource: 'pods', namespace: NS, name },
  });
  const fences: [string, string, number][] = [
    ['op-shard-3', 'chaos-0-aaaaa', 1_000],
    ['op-member-chaos-1-bbbbb', 'chaos-1-bbbbb', 2_000],
    ['op-shard-3', '', 10_000],
    ['op-shard-3', 'chaos-1-bbbbb', 11_000],
    ['op-shard-7', 'chaos-0-aaaaa', 1_000],
  ];
  const writes = [
    at(0, 5_000, 'a'), // its shard's holder
    at(1, 10_500, 'a'), // the watch saw the fence a moment after it was taken
    at(0, 15_000, 'a'), // resumed after a pause: the fence is chaos-1's
    at(0, 15_000, 'b'), // shard 7, still chaos-0's
    at(0, 15_000, 'unseen'), // never seen with a label: not judged
    at(1, 13_000, 'a'), // chaos-1's new process (started at 12 s) holds nothing yet
  ];
  const shards = new Map([
    ['pods/a', 3],
    ['pods/b', 7],
  ]);
  const found = shardOwnerOnly(system(writes, fences, [[], []], [[0], [0, 12_000]]), NS, 0, shards);
  assert.deepEqual(
    found.map((v) => v.object),
    ['chaos-0', 'chaos-1'],
  );
  assert.match(found[0]?.message ?? '', /chaos-0 wrote \(patch pods chaos-1\/a\) .* shard 3 \(chaos-1-bbbbb did\)/);
  assert.equal(found[0]?.invariant, 'shard-owner-only');
});

test('bounded-events: Events written while the objects were quiet, 5 or more, are a loop; fewer are the last pass’s', () => {
  const event = (when: number): OperatorWrite => ({
    replica: 1,
    at: when,
    info: { verb: 'patch', resource: 'events', namespace: NS, name: 'x.1' },
  });
  const writes = [event(500), ...[1_100, 1_400, 1_700, 2_000, 2_300].map(event)];
  const [v, ...rest] = eventsWhileQuiet(system(writes, []), NS, { from: 1_000, to: 3_000 });
  assert.equal(rest.length, 0);
  assert.equal(v?.invariant, 'bounded-events');
  assert.match(v?.message ?? '', /wrote 5 Events in the 2\.0 s .*\(chaos-1\)/);
  assert.deepEqual(eventsWhileQuiet(system(writes.slice(0, 5), []), NS, { from: 1_000, to: 3_000 }), []);
  assert.deepEqual(eventsWhileQuiet(system(writes, []), 'elsewhere', { from: 1_000, to: 3_000 }), []);
});

test('no-crash-loop: two exits of its own in a trial, or one in a fault-free run; the harness’s kills never count', () => {
  const loop = system(
    [],
    [],
    [
      [exit(1, false), exit(2, false)],
      [exit(3, true), exit(4, true)],
    ],
  );
  const [v, ...rest] = crashLoops(loop, [0, 0], false);
  assert.equal(rest.length, 0);
  assert.match(v?.message ?? '', /chaos-0 exited by itself 2 times, last with 1:\nboom/);
  assert.deepEqual(crashLoops(system([], [], [[exit(1, false)], []]), [0, 0], false), [], 'one exit after a fault');
  assert.equal(crashLoops(system([], [], [[exit(1, false)], []]), [0, 0], true).length, 1, 'one in a fault-free run');
});

test('token-not-logged: a replica whose output held its token for the first time in the trial', () => {
  const replicas = [
    { spec: { name: 'chaos-0' }, leaks: ['eyJhbG…'] },
    { spec: { name: 'chaos-1' }, leaks: [] },
  ];
  const sys = { replicas } as unknown as ChaosSystem;
  const [v, ...rest] = tokensLogged(sys, [0, 0]);
  assert.equal(rest.length, 0);
  assert.equal(v?.invariant, 'token-not-logged');
  assert.equal(v?.object, 'chaos-0');
  assert.match(v?.message ?? '', /chaos-0 printed its ServiceAccount token \(eyJhbG…\)/);
  assert.deepEqual(tokensLogged(sys, [1, 0]), [], 'seen in an earlier trial: reported there');
});

test('same-objects: a kind with more or fewer objects without an owner than the fault-free run', () => {
  const found = sameObjects(
    new Map([['ConfigMap', 1]]),
    new Map([
      ['ConfigMap', 2],
      ['Secret', 1],
    ]),
  );
  assert.deepEqual(
    found.map((v) => v.message),
    [
      '2 ConfigMap without an owner in the namespace (the fault-free run had 1): an object leaked (a cleanup that did not run?)',
      '1 Secret without an owner in the namespace (the fault-free run had 0): an object leaked (a cleanup that did not run?)',
    ],
  );
  assert.deepEqual(sameObjects(new Map([['ConfigMap', 1]]), new Map([['ConfigMap', 1]])), []);
});
