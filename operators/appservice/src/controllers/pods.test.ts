import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Pod } from '@opkit/runtime/kinds';
import type { AppService } from '../api/v1alpha1/appservice.ts';
import { deletionOrder, isActive, LABELS, plan, podFor, selectorString, templateHash } from './pods.ts';

const app = (spec: Partial<AppService['spec']> = {}): AppService => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u-1', generation: 1 },
  spec: { replicas: 3, image: 'busybox', ...spec },
});

let n = 0;
function pod(hash: string, phase: string, ready: boolean, extra: Partial<Pod['metadata']> = {}): Pod {
  n += 1;
  return {
    metadata: {
      name: `web-${n}`,
      namespace: 'ns',
      uid: `p-${n}`,
      creationTimestamp: `2026-01-01T00:00:${String(n).padStart(2, '0')}Z`,
      labels: { [LABELS.templateHash]: hash },
      ...extra,
    },
    status: { phase, conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

test('the pod: generateName, every selector label, the template hash, a blocking controller reference', () => {
  const a = app({ command: ['sh'], args: ['-c', 'sleep 1'], env: [{ name: 'A', value: '1' }, { name: 'B' }] });
  const p = podFor(a, templateHash(a));
  assert.equal(p.metadata.generateName, 'web-');
  assert.equal(p.metadata.name, undefined, 'never a fixed name (the seed’s AlreadyExists bug)');
  assert.equal(
    selectorString(a),
    'app.kubernetes.io/name=appservice,app.kubernetes.io/instance=web,app.kubernetes.io/managed-by=appservice-operator',
  );
  for (const part of selectorString(a).split(',')) {
    const [k, v] = part.split('=') as [string, string];
    assert.equal(p.metadata.labels?.[k], v, 'created pods carry every label they are listed by (the seed’s bug)');
  }
  assert.deepEqual(p.metadata.ownerReferences?.[0], {
    apiVersion: 'app.example.com/v1alpha1',
    kind: 'AppService',
    name: 'web',
    uid: 'u-1',
    controller: true,
    blockOwnerDeletion: true,
  });
  assert.deepEqual(p.spec?.containers[0]?.env, [
    { name: 'A', value: '1' },
    { name: 'B', value: '' },
  ]);
  assert.equal(templateHash(a), templateHash(structuredClone(a)));
  assert.notEqual(templateHash(a), templateHash(app({ image: 'alpine' })), 'an image change changes the hash');
  assert.equal(
    templateHash(app({ replicas: 9 })),
    templateHash(app({ replicas: 1 })),
    'replicas is not part of the template',
  );
});

test('counting: Pending and Running count; terminating, Failed and Succeeded do not', () => {
  assert.ok(isActive(pod('h', 'Pending', false)));
  assert.ok(isActive(pod('h', 'Running', true)));
  assert.ok(!isActive(pod('h', 'Running', true, { deletionTimestamp: '2026-01-01T00:00:00Z' })));
  assert.ok(!isActive(pod('h', 'Failed', false)));
  assert.ok(!isActive(pod('h', 'Succeeded', false)));
});

test('scale up creates all missing pods in one pass; finished pods are replaced; terminating ones ignored', () => {
  const a = app({ replicas: 5 });
  const h = templateHash(a);
  const p = plan(
    a,
    [pod(h, 'Running', true), pod(h, 'Failed', false), pod(h, 'Running', true, { deletionTimestamp: 'x' })],
    h,
  );
  assert.equal(p.create, 4);
  assert.deepEqual(
    p.delete.map((x) => x.status?.phase),
    ['Failed'],
  );
});

test('scale down deletes old template, pending, not ready, newest first — never a terminating pod', () => {
  const a = app({ replicas: 1 });
  const h = templateHash(a);
  const oldReady = pod('old', 'Running', true);
  const readyOld = pod(h, 'Running', true);
  const readyNew = pod(h, 'Running', true);
  const notReady = pod(h, 'Running', false);
  const pending = pod(h, 'Pending', false);
  const terminating = pod(h, 'Running', true, { deletionTimestamp: 'x' });
  const order = deletionOrder([readyOld, readyNew, notReady, pending, oldReady], h).map((x) => x.metadata.name);
  assert.deepEqual(
    order,
    [oldReady, pending, notReady, readyNew, readyOld].map((x) => x.metadata.name),
  );
  const p = plan(a, [readyOld, readyNew, notReady, pending, oldReady, terminating], h);
  assert.equal(p.create, 0);
  assert.deepEqual(
    p.delete.map((x) => x.metadata.name).sort(),
    [oldReady, pending, notReady, readyNew].map((x) => x.metadata.name).sort(),
  );
  assert.deepEqual(
    p.active.map((x) => x.metadata.name),
    [readyOld.metadata.name],
  );
  assert.equal(plan(app({ replicas: 0 }), [readyOld, pending], h).delete.length, 2);
});

test('a template change replaces pods with at most maxUnavailable unavailable', () => {
  const a = app({ replicas: 3, image: 'alpine' });
  const h = templateHash(a);
  const olds = [pod('old', 'Running', true), pod('old', 'Running', true), pod('old', 'Running', true)];
  const first = plan(a, olds, h);
  assert.equal(first.rolling, true);
  assert.equal(first.delete.length, 1, 'one old pod at a time');
  assert.equal(first.create, 1, 'its replacement at once');
  const replacement = pod(h, 'Pending', false);
  const waiting = plan(a, [...olds.slice(0, 2), replacement], h);
  assert.equal(waiting.delete.length, 0, 'waits while the replacement is not ready');
  assert.equal(waiting.create, 0);
  const readyReplacement = pod(h, 'Running', true);
  const next = plan(a, [...olds.slice(0, 2), readyReplacement], h);
  assert.equal(next.delete.length, 1);
  const broken = pod('old', 'Running', false);
  const withBroken = plan(a, [olds[0] as Pod, broken, pod(h, 'Pending', false)], h);
  assert.deepEqual(
    withBroken.delete.map((x) => x.metadata.name),
    [broken.metadata.name],
    'an unavailable old pod can always go',
  );
  const two = plan(app({ replicas: 3, image: 'alpine', maxUnavailable: 2 }), olds, h);
  assert.equal(two.delete.length, 2);
  const done = plan(a, [pod(h, 'Running', true), pod(h, 'Running', true), pod(h, 'Running', true)], h);
  assert.deepEqual([done.create, done.delete.length, done.rolling], [0, 0, false]);
});
