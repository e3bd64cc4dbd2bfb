import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareEndStates, endState } from './end-state.ts';
import type { Manifest } from './objects.ts';

const pod = (name: string): Manifest => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name } });
const root = (status: unknown): Manifest => ({
  apiVersion: 'app.example.com/v1alpha1',
  kind: 'AppService',
  metadata: { name: 'demo', namespace: 'chaos-3' },
  status,
});

test('endState: times, uids and generated child names compare equal; arrays of them in any order', () => {
  const a = endState(
    [
      root({
        replicas: 2,
        podNames: ['demo-x1', 'demo-y2'],
        at: '2026-12-05T20:00:00Z',
        uid: '0f8fad5b-d9cb-469f-a165-70867728950e',
      }),
    ],
    [pod('demo-x1'), pod('demo-y2')],
    [],
  );
  const b = endState(
    [
      root({
        uid: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
        at: '2026-12-05T20:01:02.123456Z',
        podNames: ['demo-q9', 'demo-p8'],
        replicas: 2,
      }),
    ],
    [pod('demo-p8'), pod('demo-q9')],
    [],
  );
  assert.deepEqual(compareEndStates(a, b), []);
});

test('endState: another value is reported with both; ignored fields are left out; a root gone is named', () => {
  const a = endState([root({ replicas: 2, phase: 'Ready', lastRun: 7 })], [], ['status.lastRun']);
  const b = endState([root({ replicas: 3, phase: 'Ready', lastRun: 8 })], [], ['status.lastRun']);
  const [d, ...rest] = compareEndStates(a, b);
  assert.equal(rest.length, 0);
  assert.equal(d?.object, 'AppService demo');
  assert.match(
    d?.message ?? '',
    /status \{"phase":"Ready","replicas":3\}, the fault-free run's \{"phase":"Ready","replicas":2\}/,
  );
  assert.match(
    compareEndStates(a, new Map())[0]?.message ?? '',
    /AppService demo: gone, but there in the fault-free run/,
  );
});

test('end state: the trial’s namespace inside a message is not a difference; the report shows where they differ', () => {
  const root = (ns: string, message: string) => ({
    apiVersion: 'x/v1',
    kind: 'Store',
    metadata: { name: 's', namespace: ns },
    status: { message },
  });
  const a = endState([root('chaos-1-2', 'PATCH /namespaces/chaos-1-2/pvcs refused')], [], []);
  const b = endState([root('chaos-1-7', 'PATCH /namespaces/chaos-1-7/pvcs refused')], [], []);
  assert.deepEqual(compareEndStates(a, b), []);
  const long = (tail: string) => endState([root('chaos-1-3', `${'x'.repeat(600)}${tail}`)], [], []);
  const [d] = compareEndStates(long('one'), long('two'));
  assert.match(d?.message ?? '', /…x+two"\}, the fault-free run's …x+one"\}/);
});
