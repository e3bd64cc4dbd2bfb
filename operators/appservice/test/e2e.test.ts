import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { isApiError } from '@opkit/runtime';
import { Pods } from '@opkit/runtime/kinds';
import { AppServices } from '../src/api/v1alpha1/appservice.ts';
import { applySample } from '../src/install.ts';
import {
  type Cluster,
  cluster,
  createApp,
  kubectl,
  livePods,
  namespace,
  type OperatorProcess,
  operator,
  settled,
  waitFor,
} from './support.ts';

describe('the AppService operator, end to end, as its own ServiceAccount', () => {
  let c: Cluster;
  let op: OperatorProcess;
  before(async () => {
    c = await cluster();
    op = operator(c);
  });
  after(async () => {
    await op?.stop();
    c?.admin.close();
    await c?.env.stop();
  });

  test('the sample converges to 3 Running pods; status, printer columns and Events are right', async () => {
    await applySample(c.admin);
    const app = await settled(c, 'default', 'example-appservice', 3);
    const pods = await livePods(c, 'default', 'example-appservice');
    assert.ok(pods.every((p) => p.status?.phase === 'Running' && p.spec?.nodeName?.startsWith('kwok-node-')));
    assert.deepEqual(app.status?.podNames, pods.map((p) => p.metadata.name).sort(), 'podNames lists exactly the pods');
    assert.equal(
      app.status?.selector,
      'app.kubernetes.io/name=appservice,app.kubernetes.io/instance=example-appservice,app.kubernetes.io/managed-by=appservice-operator',
    );
    const available = app.status?.conditions?.find((x) => x.type === 'Available');
    assert.equal(available?.status, 'True');
    assert.equal(available?.observedGeneration, app.metadata.generation);
    const get = kubectl(c, ['get', 'appservices', '-n', 'default']);
    assert.equal(get.code, 0, get.stderr);
    assert.match(get.stdout, /^NAME\s+DESIRED\s+CURRENT\s+READY\s+IMAGE\s+AGE\n/);
    assert.match(get.stdout, /example-appservice\s+3\s+3\s+3\s+busybox\s+\S+/);
    assert.equal(
      kubectl(c, ['get', 'appsvc', '-n', 'default', '-o', 'name']).stdout.trim(),
      'appservice.app.example.com/example-appservice',
    );
    assert.match(
      kubectl(c, ['get', 'all', '-n', 'default']).stdout,
      /appservice\.app\.example\.com\/example-appservice/,
      'in the all category',
    );
    const describe = kubectl(c, ['describe', 'appservice', 'example-appservice', '-n', 'default']);
    assert.match(describe.stdout, /Pod Names:/);
    assert.match(describe.stdout, /Normal\s+ScalingUp\s+.*created 3 pods \(want 3\)/);
  });

  test('scales 3 → 5 → 1 → 0 → 2, by spec and by kubectl scale, never more pods than desired once settled', async () => {
    await namespace(c, 'scale');
    await createApp(c, 'scale', 'web', { replicas: 3 });
    await settled(c, 'scale', 'web', 3);
    for (const [how, n] of [
      ['spec', 5],
      ['kubectl', 1],
      ['spec', 0],
      ['kubectl', 2],
    ] as const) {
      if (how === 'spec')
        await c.admin.patch(AppServices, { namespace: 'scale', name: 'web' }, { spec: { replicas: n } });
      else assert.equal(kubectl(c, ['scale', 'appservice/web', '-n', 'scale', `--replicas=${n}`]).code, 0);
      await settled(c, 'scale', 'web', n);
      for (let i = 0; i < 5; i++) {
        assert.equal((await livePods(c, 'scale', 'web')).length, n, `still ${n} pods after settling at ${n}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const scale = await c.admin.getScale(AppServices, { namespace: 'scale', name: 'web' });
    assert.equal(scale.status?.replicas, 2);
    assert.match(scale.status?.selector ?? '', /app\.kubernetes\.io\/instance=web/);
  });

  test('a deleted pod and a Failed pod are replaced; an image change replaces every pod', async () => {
    await namespace(c, 'heal');
    await createApp(c, 'heal', 'web', { replicas: 3 });
    await settled(c, 'heal', 'web', 3);
    const [victim, failing] = await livePods(c, 'heal', 'web');
    await c.admin.delete(Pods, { namespace: 'heal', name: victim?.metadata.name ?? '' });
    await c.admin.patchStatus(
      Pods,
      { namespace: 'heal', name: failing?.metadata.name ?? '' },
      { status: { phase: 'Failed' } },
    );
    await waitFor('both replaced', async () => {
      const names = (await livePods(c, 'heal', 'web')).map((p) => p.metadata.name);
      return names.length === 3 && !names.includes(victim?.metadata.name) && !names.includes(failing?.metadata.name);
    });
    await settled(c, 'heal', 'web', 3);
    const before = (await livePods(c, 'heal', 'web')).map((p) => p.metadata.name);
    let maxUnavailable = 0;
    const watch = setInterval(async () => {
      const pods = await livePods(c, 'heal', 'web').catch(() => []);
      const ready = pods.filter((p) =>
        p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
      ).length;
      maxUnavailable = Math.max(maxUnavailable, 3 - ready);
    }, 50);
    try {
      await c.admin.patch(AppServices, { namespace: 'heal', name: 'web' }, { spec: { image: 'alpine:3.20' } });
      await settled(c, 'heal', 'web', 3, 'alpine:3.20');
    } finally {
      clearInterval(watch);
    }
    const afterNames = (await livePods(c, 'heal', 'web')).map((p) => p.metadata.name);
    assert.ok(
      afterNames.every((n) => !before.includes(n)),
      'every pod was replaced',
    );
    assert.ok(
      maxUnavailable <= 2,
      `at most one pod unavailable at a time (+1 for the observer's lag), saw ${maxUnavailable}`,
    );
  });

  test('deleting the AppService garbage-collects its pods', async () => {
    await namespace(c, 'gc');
    await createApp(c, 'gc', 'web', { replicas: 2 });
    await settled(c, 'gc', 'web', 2);
    await c.admin.delete(AppServices, { namespace: 'gc', name: 'web' });
    // the garbage collector picks up a new CRD's resources on its next discovery resync (every 30 s)
    await waitFor(
      'pods collected',
      async () => (await c.admin.list(Pods, { namespace: 'gc' })).items.length === 0,
      90_000,
    );
  });

  test('multibyte env values spanning many network chunks reach the pods intact, and the pods are not rolled', async () => {
    await namespace(c, 'utf8');
    const env = Array.from({ length: 10 }, (_, i) => ({
      name: `GREETING_${i}`,
      value: `héllo wörld ${i} — 日本語 — 😀 — ${'ü€𝄞'.repeat(2_500)}`,
    }));
    await createApp(c, 'utf8', 'intl', { replicas: 2, env });
    await settled(c, 'utf8', 'intl', 2);
    const first = await livePods(c, 'utf8', 'intl');
    for (const pod of first) {
      const got = pod.spec?.containers[0]?.env ?? [];
      assert.equal(got.length, env.length);
      for (const [i, e] of env.entries()) assert.ok(got[i]?.value === e.value, `${pod.metadata.name} ${e.name} intact`);
    }
    await new Promise((r) => setTimeout(r, 3_000));
    const later = await livePods(c, 'utf8', 'intl');
    assert.deepEqual(
      later.map((p) => p.metadata.name).sort(),
      first.map((p) => p.metadata.name).sort(),
      'no rollout: the template hash is stable',
    );
  });

  test('orphaned pods are adopted: delete --cascade=orphan, re-create, the same pods come back under the new owner', async () => {
    await namespace(c, 'orphan');
    await createApp(c, 'orphan', 'web', { replicas: 3 });
    await settled(c, 'orphan', 'web', 3);
    const before = (await livePods(c, 'orphan', 'web')).map((p) => p.metadata.name).sort();
    const del = kubectl(c, ['delete', 'appservice', 'web', '-n', 'orphan', '--cascade=orphan', '--wait=true']);
    assert.equal(del.code, 0, del.stderr);
    await waitFor('the pods to be orphaned', async () =>
      (await c.admin.list(Pods, { namespace: 'orphan' })).items.every((p) => !p.metadata.ownerReferences?.length),
    );
    const app = await createApp(c, 'orphan', 'web', { replicas: 3 });
    await settled(c, 'orphan', 'web', 3);
    const pods = await livePods(c, 'orphan', 'web');
    assert.deepEqual(pods.map((p) => p.metadata.name).sort(), before, 'the same pods, no second set');
    for (const p of pods)
      assert.equal(p.metadata.ownerReferences?.find((r) => r.controller)?.uid, app.metadata.uid, 'adopted');
    assert.equal((await c.admin.list(Pods, { namespace: 'orphan' })).items.length, 3);
  });

  test('invalid bodies are refused by the apiserver with a message naming the field', async () => {
    await namespace(c, 'bad');
    const post = async (spec: unknown) => {
      try {
        await c.admin.transport.request({
          method: 'POST',
          path: '/apis/app.example.com/v1alpha1/namespaces/bad/appservices',
          query: { fieldValidation: 'Strict' }, // what kubectl sends by default
          body: { apiVersion: 'app.example.com/v1alpha1', kind: 'AppService', metadata: { generateName: 'x-' }, spec },
        });
        return 'accepted';
      } catch (err) {
        assert.ok(isApiError(err));
        return err.message;
      }
    };
    assert.match(await post({ replicas: -1 }), /spec\.replicas.*greater than or equal to 0/);
    assert.match(await post({ replicas: 'three' }), /spec\.replicas.*(integer|must be of type)/);
    assert.match(await post({ size: 3 }), /unknown field "spec\.size"/);
    assert.match(await post({ env: [{ name: '1bad name', value: 'x' }] }), /spec\.env\[0\]\.name/);
    assert.match(await post({ env: [{ name: 'A' }, { name: 'A' }] }), /spec\.env\[1\]: Duplicate value/);
    assert.match(
      await post({ resources: { requests: { memory: '1Gi' }, limits: { memory: '512Mi' } } }),
      /spec\.resources.*limits must not be lower than resources\.requests/,
    );
    assert.equal(
      await post({ replicas: 0, resources: { requests: { cpu: '100m' }, limits: { cpu: '1' } } }),
      'accepted',
    );
  });

  test('SIGKILL in the middle of a scale-up, restart: converges with no overshoot', async () => {
    await namespace(c, 'crash');
    let max = 0;
    let killedAt = 0;
    const watch = setInterval(async () => {
      const n = (await livePods(c, 'crash', 'web').catch(() => [])).length;
      max = Math.max(max, n);
    }, 20);
    try {
      await createApp(c, 'crash', 'web', { replicas: 150 });
      await waitFor('some pods', async () => (await livePods(c, 'crash', 'web')).length >= 5, 30_000);
      await op.stop('SIGKILL');
      killedAt = (await livePods(c, 'crash', 'web')).length;
      op = operator(c);
      await settled(c, 'crash', 'web', 150);
    } finally {
      clearInterval(watch);
    }
    const killedWith = killedAt;
    assert.ok(killedWith > 0 && killedWith < 150, `killed mid scale-up (${killedWith} pods existed)`);
    assert.ok(max <= 150, `never more than 150 pods, saw ${max}`);
    assert.equal((await c.admin.list(Pods, { namespace: 'crash' })).items.length, 150);
  });

  test('two replicas: one leader acts; no writes at all while idle for 60 s', { timeout: 180_000 }, async () => {
    await op.stop();
    const a = operator(c, ['--leader-elect', '--leader-election-namespace', 'appservice-system']);
    const b = operator(c, ['--leader-elect', '--leader-election-namespace', 'appservice-system']);
    try {
      await namespace(c, 'idle');
      await createApp(c, 'idle', 'web', { replicas: 3 });
      await settled(c, 'idle', 'web', 3);
      await new Promise((r) => setTimeout(r, 2_000));
      const audit = c.env.auditLogPath as string;
      const before = (await readFile(audit, 'utf8')).length;
      await new Promise((r) => setTimeout(r, 60_000));
      const lines = (await readFile(audit, 'utf8')).slice(before).split('\n').filter(Boolean);
      const writes = lines
        .map((l) => JSON.parse(l) as { verb: string; user: { username: string }; objectRef?: { resource?: string } })
        .filter((e) => e.user.username === 'system:serviceaccount:appservice-system:appservice-operator')
        .filter((e) => !['get', 'list', 'watch'].includes(e.verb))
        .filter((e) => e.objectRef?.resource !== 'leases');
      assert.deepEqual(
        writes.map((w) => `${w.verb} ${w.objectRef?.resource}`),
        [],
        'no writes while idle (lease renewals aside)',
      );
      const leases = lines.filter((l) => l.includes('"resource":"leases"') && l.includes('"verb":"update"')).length;
      assert.ok(leases > 0, 'the leader renews its lease meanwhile');
      const workers = [a, b].filter((o) => o.log.includes('"msg":"starting workers"'));
      assert.equal(workers.length, 1, 'exactly one replica runs the controller');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      op = operator(c);
    }
  });
});
