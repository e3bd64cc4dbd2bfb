// The KVStore controller end to end on testenv: the StatefulSet with a PVC per pod, the headless Service, the
// credentials Secret made once (never in the log, an Event or the status), status and conditions, and a version
// upgrade (with new resources, compared by value) rolled one pod at a time through the partition.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getCondition } from '@opkit/runtime';
import {
  Events,
  EventsV1Events,
  PersistentVolumeClaims,
  Pods,
  Secrets,
  Services,
  StatefulSets,
} from '@opkit/runtime/kinds';
import { type Environment, start } from '@opkit/testenv';
import { KVStores } from '../src/api/v1alpha1/kvstore.ts';
import { namespace, startOperator, storeReady } from './support.ts';

let env: Environment;
before(async () => {
  env = await start({ nodes: 2, log: () => {} });
});
after(async () => {
  await env?.stop();
});

test('a KVStore gets its StatefulSet, PVCs, Service and Secret, and reports Ready', async () => {
  const { op, log } = await startOperator(env);
  try {
    const ns = await namespace(op, 'store');
    await op.client.create(KVStores, { metadata: { namespace: ns, name: 'db' }, spec: { replicas: 3 } });
    const store = await storeReady(op, ns, 'db');
    assert.deepEqual([store.status?.readyReplicas, store.status?.currentVersion], [3, '1.36']);
    assert.equal(getCondition(store.status?.conditions, 'Progressing')?.reason, 'Complete');
    const sts = await op.client.get(StatefulSets, { namespace: ns, name: 'db' });
    assert.equal(sts.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage, '1Gi');
    const pvcs = (await op.client.list(PersistentVolumeClaims, { namespace: ns })).items;
    assert.deepEqual(
      pvcs.map((p) => `${p.metadata.name} ${p.status?.phase}`).sort(),
      ['data-db-0 Bound', 'data-db-1 Bound', 'data-db-2 Bound'],
      "bound by testenv's provisioner",
    );
    const svc = await op.client.get(Services, { namespace: ns, name: 'db' });
    assert.equal(svc.spec?.clusterIP, 'None');

    // the Secret: made once, never changed by later reconciles, its password nowhere else
    const secret = await op.client.get(Secrets, { namespace: ns, name: 'db-credentials' });
    const password = Buffer.from(secret.data?.password ?? '', 'base64').toString('utf8');
    assert.ok(password.length >= 24, 'a generated password');
    assert.equal(secret.immutable, true);
    await op.client.patch(KVStores, { namespace: ns, name: 'db' }, { spec: { replicas: 2 } });
    await op.eventually(
      '2 ready',
      async () => (await op.client.get(KVStores, { namespace: ns, name: 'db' })).status?.readyReplicas === 2,
    );
    await storeReady(op, ns, 'db');
    const again = await op.client.get(Secrets, { namespace: ns, name: 'db-credentials' });
    assert.deepEqual(
      [again.metadata.uid, again.metadata.resourceVersion],
      [secret.metadata.uid, secret.metadata.resourceVersion],
    );
    const events = (await op.client.list(Events, { namespace: ns })).items;
    const status = JSON.stringify(await op.client.get(KVStores, { namespace: ns, name: 'db' }));
    for (const [where, text] of [
      ['the log', log()],
      ['an Event', JSON.stringify(events)],
      ['the status', status],
    ] as const)
      assert.ok(
        !text.includes(password) && !text.includes(secret.data?.password ?? '-'),
        `the password is not in ${where}`,
      );
    assert.ok(log().length > 0, 'the log was captured');
  } finally {
    await op.stop();
  }
});

test('a version upgrade (with new resources) rolls one pod at a time, each Ready before the next', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'upgrade');
    // '0.1' is stored in the pod template as '100m': compared by value, it is no change (else the store never settles)
    await op.client.create(KVStores, {
      metadata: { namespace: ns, name: 'db' },
      spec: { replicas: 3, version: '1.36', resources: { requests: { cpu: '0.1', memory: '32Mi' } } },
    });
    await storeReady(op, ns, 'db');
    const seen: { partition: number; notReady: number; updated: number }[] = [];
    let watching = true;
    const watch = (async () => {
      while (watching) {
        // a poll the apiserver fails (a 429 while it is busy, say) is skipped, not the test's end
        const read = await Promise.all([
          op.client.get(StatefulSets, { namespace: ns, name: 'db' }),
          op.client.list(Pods, { namespace: ns, labelSelector: 'app.kubernetes.io/instance=db' }),
        ]).catch(() => undefined);
        if (!read) {
          await new Promise((r) => setTimeout(r, 25));
          continue;
        }
        const [sts, { items: pods }] = read;
        const notReady = pods.filter(
          (p) =>
            p.metadata.deletionTimestamp ||
            !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ).length;
        const updated = pods.filter((p) => p.spec?.containers[0]?.image?.endsWith(':1.37')).length;
        seen.push({
          partition: sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0,
          notReady: notReady + 3 - pods.length,
          updated,
        });
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    const resources = { requests: { cpu: '200m', memory: '32Mi' } };
    await op.client.patch(KVStores, { namespace: ns, name: 'db' }, { spec: { version: '1.37', resources } });
    const done = await op.eventually(
      'version 1.37 everywhere',
      async () => {
        const s = await op.client.get(KVStores, { namespace: ns, name: 'db' });
        return (
          s.status?.currentVersion === '1.37' && getCondition(s.status.conditions, 'Ready')?.status === 'True' && s
        );
      },
      { timeoutMs: 120_000 },
    );
    watching = false;
    await watch;
    assert.equal(done.status?.readyReplicas, 3);
    assert.ok(
      seen.every((s) => s.notReady <= 1),
      `never more than one pod down: ${JSON.stringify(seen.filter((s) => s.notReady > 1))}`,
    );
    // the partitions seen, in order, follow 0 → 3 → 2 → 1 → 0 (a poll may miss a short one, never reorder them)
    const partitions = seen.map((s) => s.partition).filter((p, i, all) => i === 0 || all[i - 1] !== p);
    const order = [0, 3, 2, 1, 0];
    let at = 0;
    for (const p of partitions) {
      while (at < order.length && order[at] !== p) at++;
      assert.ok(at < order.length, `partitions out of order: ${partitions.join(' → ')}`);
    }
    // an Event per step: they are written in the background, so wait until the server counts the 3 steps recorded
    // (series counts included), then check that each step is an Event of its own
    const rolling = await op.eventually('3 RollingUpdate steps written', async () => {
      const events = (await op.client.list(EventsV1Events, { namespace: ns })).items.filter(
        (e) => e.reason === 'RollingUpdate',
      );
      return events.reduce((n, e) => n + (e.series?.count ?? 1), 0) >= 3 && events;
    });
    const steps = rolling
      .map((e) =>
        /partition (\d) → (\d)/
          .exec(e.note ?? '')
          ?.slice(1)
          .join('→'),
      )
      .sort();
    assert.deepEqual(
      steps,
      ['1→0', '2→1', '3→2'],
      `an Event per step: ${JSON.stringify(rolling.map((e) => ({ note: e.note, count: e.series?.count ?? 1, regarding: e.regarding?.resourceVersion })))}`,
    );
    const pods = (await op.client.list(Pods, { namespace: ns, labelSelector: 'app.kubernetes.io/instance=db' })).items;
    assert.ok(pods.every((p) => p.spec?.containers[0]?.image === 'docker.io/library/busybox:1.37'));
    assert.deepEqual(
      pods.map((p) => p.spec?.containers[0]?.resources?.requests),
      pods.map(() => resources.requests),
    );
  } finally {
    await op.stop();
  }
});

test('a larger spec.storage is asked of each PVC; a class that cannot expand refuses, and the status says so', async () => {
  const { op } = await startOperator(env);
  try {
    const ns = await namespace(op, 'grow');
    await op.client.create(KVStores, {
      metadata: { namespace: ns, name: 'db' },
      spec: { replicas: 2, storage: '1Gi' },
    });
    await storeReady(op, ns, 'db');
    await op.client.patch(KVStores, { namespace: ns, name: 'db' }, { spec: { storage: '2Gi' } });
    // testenv's StorageClasses say allowVolumeExpansion: false (docs/testenv.md), as kind's and minikube's do
    const refused = await op.eventually('VolumesResized False', async () => {
      const s = await op.client.get(KVStores, { namespace: ns, name: 'db' });
      const c = getCondition(s.status?.conditions, 'VolumesResized');
      return c?.status === 'False' && c.observedGeneration === s.metadata.generation && c;
    });
    assert.equal(refused.reason, 'ExpansionRefused');
    assert.match(
      refused.message,
      /data-db-\d cannot grow to 2Gi: .*storageclass that provisions the pvc must support resize/,
    );
    const pvcs = (await op.client.list(PersistentVolumeClaims, { namespace: ns })).items;
    assert.ok(
      pvcs.every((p) => p.spec?.resources?.requests?.storage === '1Gi'),
      'nothing changed',
    );
    const events = (await op.client.list(Events, { namespace: ns })).items.filter((e) => e.reason === 'ResizeRefused');
    assert.equal(events.length, 1, 'one Warning, not one per reconcile');
  } finally {
    await op.stop();
  }
});
