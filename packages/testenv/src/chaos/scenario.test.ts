import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isTestenvError } from '../errors.ts';
import { counts } from './faults.ts';
import type { Manifest } from './objects.ts';
import { checkScenario, describeStep, EDIT_LABEL, samplesScenario } from './scenario.ts';

const sample: Manifest = {
  apiVersion: 'app.example.com/v1alpha1',
  kind: 'AppService',
  metadata: { name: 'démo-ü', labels: { team: 'a' } },
  spec: { replicas: 2 },
};

test('samplesScenario: apply each, edit each (a label and annotation, the spec unchanged), delete each, last first', () => {
  const other = { ...sample, metadata: { name: 'second' } };
  const s = samplesScenario([sample, other], 'config/samples');
  assert.deepEqual(s.steps.map(describeStep), [
    'apply AppService démo-ü',
    'apply AppService second',
    'apply AppService démo-ü',
    'apply AppService second',
    'delete AppService second',
    'delete AppService démo-ü',
  ]);
  const edited = s.steps[2]?.apply;
  assert.deepEqual(edited?.metadata.labels, { team: 'a', [EDIT_LABEL]: 'true' });
  assert.deepEqual(edited?.spec, sample.spec);
  assert.deepEqual(sample.metadata.labels, { team: 'a' }, 'the sample itself is left as it was');
  checkScenario(s, 'config/samples');
});

test('checkScenario: names the file and the step of what it refuses', () => {
  const cases: [unknown, RegExp][] = [
    [null, /f\.ts: a scenario must be an object/],
    [{ steps: [] }, /needs a name/],
    [{ name: 'x', steps: [] }, /scenario "x" needs at least one step/],
    [{ name: 'x', steps: [{ apply: sample, delete: sample }] }, /scenario "x", step 1: a step is \{ apply/],
    [
      { name: 'x', steps: [{ apply: sample }, { apply: { kind: 'A', metadata: { name: 'a' } } }] },
      /step 2: apiVersion is missing/,
    ],
    [
      { name: 'x', steps: [{ apply: { apiVersion: 'v1', kind: 'A', metadata: {} } }] },
      /step 1: metadata.name is missing/,
    ],
    [{ name: 'x', steps: [{ delete: { apiVersion: 'v1', kind: 'A' } }] }, /step 1: name is missing/],
    [{ name: 'x', steps: [{ apply: sample, note: 3 }] }, /step 1: note, if given, is a string/],
  ];
  for (const [s, message] of cases)
    assert.throws(
      () => checkScenario(s, 'f.ts'),
      (e) => isTestenvError(e) && e.code === 'ChaosInput' && message.test(e.message),
    );
});

test('describeStep: a step in words, with its note', () => {
  const widget = { apiVersion: 'v1', kind: 'Widget', metadata: { name: 'w' } };
  assert.equal(describeStep({ apply: widget, note: 'spec.replicas: 3 → 2' }), 'apply Widget w (spec.replicas: 3 → 2)');
  assert.equal(describeStep({ delete: { apiVersion: 'v1', kind: 'Widget', name: 'w' } }), 'delete Widget w');
});

test('counts: the operator writes of the trial namespace and cluster-scoped ones, never Leases, Events or reads', () => {
  assert.ok(counts({ verb: 'create', resource: 'pods', namespace: 'chaos-1' }, 'chaos-1'));
  assert.ok(counts({ verb: 'patch', resource: 'clusterthings', name: 'a' }, 'chaos-1'));
  assert.ok(!counts({ verb: 'create', resource: 'pods', namespace: 'chaos-2' }, 'chaos-1'));
  assert.ok(!counts({ verb: 'update', resource: 'leases', namespace: 'chaos-1' }, 'chaos-1'));
  assert.ok(!counts({ verb: 'create', resource: 'events', namespace: 'chaos-1' }, 'chaos-1'));
  assert.ok(!counts({ verb: 'get', resource: 'pods', namespace: 'chaos-1' }, 'chaos-1'));
});
