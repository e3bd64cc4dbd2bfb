import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventRecorder, type EventRecorderOptions } from '@opkit/runtime/helpers';
import { silentLogger } from '@opkit/runtime/manager';
import { KVStores } from '../api/v1alpha1/kvstore.ts';
import { store, sts } from './fixtures.ts';
import {
  desiredSecret,
  desiredService,
  desiredStatefulSet,
  planRollout,
  sameResources,
  stepEvent,
  templateImage,
} from './statefulset.ts';

const IMAGE = (v: string) => `docker.io/library/busybox:${v}`;

test('a new StatefulSet: a PVC per pod from the template, the Secret by reference, a headless Service', () => {
  const s = store({ storage: '2Gi' });
  const set = desiredStatefulSet(s, 3);
  assert.equal(set.spec?.replicas, 3);
  assert.equal(set.spec?.serviceName, 'db');
  assert.deepEqual(set.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests, { storage: '2Gi' });
  assert.equal(templateImage(set), IMAGE('1.36'));
  const env = set.spec?.template.spec?.containers[0]?.env ?? [];
  assert.deepEqual(
    env.map((e) => e.valueFrom?.secretKeyRef?.name),
    ['db-credentials', 'db-credentials'],
  );
  assert.equal(desiredService(s).spec?.clusterIP, 'None');
  const secret = desiredSecret(s, 'pw');
  assert.deepEqual(
    [secret.metadata.name, secret.immutable, secret.stringData?.password],
    ['db-credentials', true, 'pw'],
  );
});

test('nothing to do once converged; replicas follow the spec', () => {
  const s = store();
  assert.deepEqual(planRollout(s, sts(s, { replicas: 3 }), 3), {
    patch: undefined,
    rolling: false,
    step: undefined,
    converged: true,
  });
  const up = planRollout(s, sts(s, { replicas: 3 }), 5);
  assert.deepEqual(up.patch, { spec: { replicas: 5 } });
  assert.equal(up.converged, false);
  assert.equal(planRollout(s, sts(s, { replicas: 3, observed: false }), 3).converged, false);
});

test('a new version raises the partition to the replicas first: no pod changes yet', () => {
  const s = store({ version: '1.37' });
  const p = planRollout(s, sts(s, { replicas: 3, version: '1.36' }), 3);
  assert.equal(p.rolling, true);
  const spec = p.patch?.spec;
  assert.deepEqual(spec?.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { partition: 3 } });
  assert.equal(spec?.template?.spec?.containers?.[0]?.image, IMAGE('1.37'));
  assert.equal(
    spec?.template?.spec?.containers?.[0]?.name,
    'kv',
    'the whole container: a merge patch replaces the list',
  );
});

test('the partition steps down one at a time, only when the updated pods are Ready and the change was seen', () => {
  const s = store({ version: '1.37' });
  const at = (partition: number, o: { ready?: number; updated?: number; observed?: boolean } = {}) =>
    planRollout(s, sts(s, { replicas: 3, partition, ...o }), 3);
  assert.deepEqual(at(3, { updated: 0 }).step, { from: 3, to: 2 });
  assert.deepEqual(at(3, { updated: 0 }).patch?.spec?.updateStrategy?.rollingUpdate, { partition: 2 });
  // partition 2: pod 2 must be updated and every pod Ready
  assert.equal(at(2, { updated: 0 }).step, undefined, 'pod 2 not replaced yet');
  assert.equal(at(2, { updated: 1, ready: 2 }).step, undefined, 'pod 2 replaced, not Ready yet');
  assert.equal(at(2, { updated: 1, observed: false }).step, undefined, 'the controller has not seen the last step');
  assert.deepEqual(at(2, { updated: 1 }).step, { from: 2, to: 1 });
  assert.deepEqual(at(1, { updated: 2 }).step, { from: 1, to: 0 });
  const end = at(0);
  assert.deepEqual([end.rolling, end.converged, end.patch], [false, true, undefined]);
});

test('no step while the replicas change; a version change mid-rollout starts over from the top', () => {
  const s = store({ version: '1.37' });
  const scaling = planRollout(s, sts(s, { replicas: 3, partition: 2, updated: 1 }), 4);
  assert.deepEqual([scaling.step, scaling.patch], [undefined, { spec: { replicas: 4 } }]);
  const again = planRollout(store({ version: '1.38' }), sts(s, { replicas: 3, partition: 1, updated: 2 }), 3);
  assert.deepEqual(again.patch?.spec?.updateStrategy?.rollingUpdate, { partition: 3 });
});

test('each rollout step is an Event of its own, even when the store did not change between two steps', async () => {
  // the recorder keys a series as client-go does (action, reason, regarding and related, not the note): two steps
  // recorded about the same store at the same resourceVersion must still differ in the key
  const writes: { verb: string; note?: unknown }[] = [];
  const client: EventRecorderOptions['client'] = {
    serverResources: async () => [{ name: 'events', kind: 'Event', namespaced: true }],
    create: async (_r, obj) => {
      writes.push({ verb: 'create', note: (obj as { note?: unknown }).note });
      return obj as never;
    },
    patch: async (_r, ref) => {
      writes.push({ verb: 'patch' });
      return { metadata: { ...ref } } as never;
    },
  };
  const recorder = new EventRecorder({ client, component: 'kvstore', log: silentLogger });
  const s = store({ version: '1.37' });
  s.metadata.resourceVersion = '100'; // the status did not change between the two steps: one resourceVersion
  for (const [partition, rv] of [
    [3, '11'],
    [2, '12'],
  ] as const) {
    const patched = sts(s, { replicas: 3, partition: partition - 1 });
    patched.metadata.resourceVersion = rv;
    const e = stepEvent(s, { from: partition, to: partition - 1 }, patched);
    recorder.event(KVStores, s, 'Normal', e.reason, e.note, e.options);
  }
  await recorder.flush();
  assert.deepEqual(writes, [
    { verb: 'create', note: 'pod db-2 → version 1.37 (partition 3 → 2)' },
    { verb: 'create', note: 'pod db-1 → version 1.37 (partition 2 → 1)' },
  ]);
});

test('resources: the pods get spec.resources; the same values written otherwise (0.5 for 500m) change nothing', () => {
  const s = store({ resources: { requests: { cpu: '500m', memory: '64Mi' }, limits: { memory: '128Mi' } } });
  const set = desiredStatefulSet(s, 3);
  assert.deepEqual(set.spec?.template.spec?.containers[0]?.resources, s.spec.resources);
  assert.equal(desiredStatefulSet(store(), 3).spec?.template.spec?.containers[0]?.resources, undefined);
  // the apiserver stores quantities in canonical form: what the spec says is compared by value, never as text
  const stored = store({ resources: { requests: { cpu: 0.5, memory: '65536Ki' }, limits: { memory: '0.125Gi' } } });
  const p = planRollout(s, sts(stored, { replicas: 3 }), 3);
  assert.deepEqual([p.patch, p.converged], [undefined, true]);
  assert.equal(sameResources({ requests: { cpu: '1' } }, { requests: { cpu: '1', memory: '1Gi' } }), false);
  assert.equal(sameResources({ limits: { cpu: '2' } }, { requests: { cpu: '2' } }), false);
});

test('new resources roll the pods as a new version does: partition raised, the whole container, resources left out when unset', () => {
  const before = store({ resources: { requests: { cpu: '100m' } } });
  const after = store({ resources: { requests: { cpu: '200m' } } });
  const p = planRollout(after, sts(before, { replicas: 3 }), 3);
  assert.equal(p.rolling, true);
  const spec = p.patch?.spec;
  assert.deepEqual(spec?.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { partition: 3 } });
  const c = spec?.template?.spec?.containers?.[0];
  assert.deepEqual(c?.resources, { requests: { cpu: '200m' } });
  assert.equal(c?.image, IMAGE('1.36'), 'the image is kept');
  assert.deepEqual(c?.volumeMounts, [{ name: 'data', mountPath: '/data' }], 'the rest of the container is kept');
  const unset = planRollout(store(), sts(before, { replicas: 3 }), 3);
  assert.equal(unset.patch?.spec?.template?.spec?.containers?.[0]?.resources, undefined);
  assert.equal(unset.rolling, true);
});
