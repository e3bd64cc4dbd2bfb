import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ReplicaExit } from './replicas.ts';
import type { ChaosSystem, LeaseHolder, OperatorWrite } from './system.ts';
import { crashLoops, leaderOnly, sameObjects } from './verdicts.ts';

const NS = 'chaos-1';
const write = (replica: number, at: number): OperatorWrite => ({
  replica,
  at,
  info: { verb: 'create', resource: 'pods', namespace: NS },
});
const exit = (at: number, caused: boolean): ReplicaExit => ({ code: 1, signal: null, at, caused, tail: ['boom'] });

/** The parts of a system the verdicts read. */
function system(writes: OperatorWrite[], holders: LeaseHolder[], exits: ReplicaExit[][] = [[], []]): ChaosSystem {
  const replicas = exits.map((e, i) => ({ spec: { name: `chaos-${i}` }, starts: [0], exits: e }));
  return { writes, holders, replicas } as unknown as ChaosSystem;
}

test('leader-only: a write by the holder passes, also just before the watch saw its takeover; a deposed leader fails', () => {
  const holders: LeaseHolder[] = [
    { identity: 'chaos-0_a', replica: 0, at: 1_000 },
    { identity: 'chaos-1_b', replica: 1, at: 20_000 },
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
