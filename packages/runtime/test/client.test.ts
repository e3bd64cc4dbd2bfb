import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import {
  ClusterRoleBindings,
  ClusterRoles,
  ConfigMaps,
  Deployments,
  Namespaces,
  Pods,
  Secrets,
  ServiceAccounts,
} from '../src/client/builtins.ts';
import { type Client, loadConfig, Client as RuntimeClient } from '../src/client/index.ts';
import { rbacManifests } from '../src/helpers/index.ts';
import { ApiError, isApiError, permission } from '../src/index.ts';
import { installWidgetCrd, startEnv, Widgets, waitFor } from './support.ts';

describe('client against a real apiserver', () => {
  let env: Environment;
  let client: Client;
  before(async () => {
    ({ env, client } = await startEnv());
    await installWidgetCrd(client);
    await client.create(Namespaces, { metadata: { name: 'c' } });
  });
  after(async () => {
    client?.close();
    await env?.stop();
  });

  test('create / get / update / delete, namespaced and cluster-scoped, with typed errors', async () => {
    const cm = await client.create(ConfigMaps, { metadata: { name: 'one', namespace: 'c' }, data: { a: '1' } });
    assert.ok(cm.metadata.uid);
    assert.equal(typeof cm.metadata.creationTimestamp, 'string', 'timestamps stay RFC 3339 strings');
    const got = await client.get(ConfigMaps, { namespace: 'c', name: 'one' });
    assert.equal(got.data?.a, '1');
    got.data = { a: '2' };
    const updated = await client.update(ConfigMaps, got);
    assert.equal(updated.data?.a, '2');
    // a stale resourceVersion is a Conflict
    await assert.rejects(
      client.update(ConfigMaps, { ...got, data: { a: '3' } }),
      (e) => isApiError(e, 'Conflict') && e.status === 409,
    );
    await assert.rejects(client.create(ConfigMaps, { metadata: { name: 'one', namespace: 'c' } }), (e) =>
      isApiError(e, 'AlreadyExists'),
    );
    await assert.rejects(
      client.get(ConfigMaps, { namespace: 'c', name: 'nope' }),
      (e) => isApiError(e, 'NotFound') && e.status === 404,
    );
    const ns = await client.get(Namespaces, { name: 'c' });
    assert.equal(ns.metadata.name, 'c');
    // delete with a precondition on the UID: a wrong UID is a Conflict, the right one deletes
    await assert.rejects(
      client.delete(ConfigMaps, { namespace: 'c', name: 'one' }, { preconditions: { uid: 'not-the-uid' } }),
      (e) => isApiError(e, 'Conflict'),
    );
    await client.delete(
      ConfigMaps,
      { namespace: 'c', name: 'one' },
      { preconditions: { uid: cm.metadata.uid as string } },
    );
    await assert.rejects(client.get(ConfigMaps, { namespace: 'c', name: 'one' }), (e) => isApiError(e, 'NotFound'));
  });

  test('Invalid errors carry the field causes', async () => {
    await assert.rejects(client.create(ConfigMaps, { metadata: { name: 'Bad_Name', namespace: 'c' } }), (e) => {
      assert.ok(e instanceof ApiError);
      assert.equal(e.code, 'Invalid');
      assert.equal(e.status, 422);
      assert.ok(
        e.causes.some((c) => c.field === 'metadata.name'),
        JSON.stringify(e.causes),
      );
      assert.equal(e.retryable, false);
      return true;
    });
    await assert.rejects(
      client.create(Widgets, { metadata: { name: 'w', namespace: 'c' }, spec: { replicas: -1 } }),
      (e) => isApiError(e, 'Invalid') && e.causes.some((c) => c.field === 'spec.replicas'),
    );
  });

  test('fieldValidation: Strict fails a typo naming the field; Warn drops it and warns; Ignore drops it silently', async () => {
    const heard: string[] = [];
    const config = await loadConfig({ path: env.kubeconfigPath });
    const strict = new RuntimeClient(config, { fieldValidation: 'Strict', onWarning: (text) => heard.push(text) });
    try {
      // an unstructured write with a typo (and a non-ASCII one), as a cast or a JavaScript caller sends it
      const typo = (name: string) =>
        ({ metadata: { name, namespace: 'c' }, spec: { replcas: 3, färbe: 'rot' } }) as never;
      await assert.rejects(strict.create(Widgets, typo('strict')), (e) => {
        assert.ok(isApiError(e, 'BadRequest'), String(e));
        assert.match(e.message, /unknown field "spec\.replcas"/);
        assert.match(e.message, /unknown field "spec\.färbe"/);
        return true;
      });
      await assert.rejects(client.get(Widgets, { namespace: 'c', name: 'strict' }), (e) => isApiError(e, 'NotFound'));
      // a patch too, and the per-call setting wins over the client's
      const w = await strict.create(Widgets, { metadata: { name: 'ok', namespace: 'c' }, spec: { replicas: 1 } });
      await assert.rejects(strict.patch(Widgets, w.metadata as never, { spec: { colour: 'red' } }), (e) => {
        assert.ok(isApiError(e, 'Invalid'), String(e)); // a patch's strict error is a 422, naming the patch
        assert.match(e.message, /patch: strict decoding error: unknown field "spec\.colour"$/);
        assert.ok(e.message.length < 200, `without the patched object: ${e.message}`);
        return true;
      });
      await strict.patch(Widgets, w.metadata as never, { spec: { colour: 'red' } }, { fieldValidation: 'Ignore' });
      assert.deepEqual(heard, [], 'Ignore: no warning');
      await strict.create(Widgets, typo('warned'), { fieldValidation: 'Warn' });
      assert.deepEqual(
        (await client.get(Widgets, { namespace: 'c', name: 'warned' })).spec,
        {},
        'the unknown fields were dropped',
      );
      assert.deepEqual(heard.sort(), ['unknown field "spec.färbe"', 'unknown field "spec.replcas"']);
    } finally {
      strict.close();
    }
  });

  test('merge, JSON and strategic merge patches, and server-side apply with a field manager', async () => {
    await client.create(ConfigMaps, { metadata: { name: 'p', namespace: 'c', labels: { a: '1' } }, data: { x: '1' } });
    const ref = { namespace: 'c', name: 'p' };
    let cm = await client.patch(ConfigMaps, ref, { data: { y: '2' } });
    assert.deepEqual(cm.data, { x: '1', y: '2' });
    cm = await client.patch(ConfigMaps, ref, [{ op: 'remove', path: '/data/x' }], { type: 'json' });
    assert.deepEqual(cm.data, { y: '2' });
    const dep = await client.create(Deployments, {
      metadata: { name: 'd', namespace: 'c' },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'd' } },
        template: {
          metadata: { labels: { app: 'd' } },
          spec: {
            containers: [
              { name: 'main', image: 'busybox' },
              { name: 'side', image: 'busybox' },
            ],
          },
        },
      },
    });
    assert.equal(dep.spec?.template.spec?.containers.length, 2);
    // strategic merge: the containers list merges by name (a merge patch would replace the whole list)
    const patched = await client.patch(
      Deployments,
      { namespace: 'c', name: 'd' },
      { spec: { template: { spec: { containers: [{ name: 'side', image: 'alpine' }] } } } },
      { type: 'strategic' },
    );
    assert.deepEqual(
      patched.spec?.template.spec?.containers.map((c) => `${c.name}=${c.image}`),
      ['main=busybox', 'side=alpine'],
    );
    const applied = await client.apply(
      ConfigMaps,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'c' }, data: { k: 'v' } },
      { fieldManager: 'opkit-test' },
    );
    assert.equal(applied.data?.k, 'v');
    assert.ok(applied.metadata.managedFields?.some((f) => f.manager === 'opkit-test'));
    // another manager changing the same field conflicts unless it forces
    await assert.rejects(
      client.apply(
        ConfigMaps,
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'c' }, data: { k: 'w' } },
        { fieldManager: 'other' },
      ),
      (e) => isApiError(e, 'Conflict'),
    );
    const forced = await client.apply(
      ConfigMaps,
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: 'c' }, data: { k: 'w' } },
      { fieldManager: 'other', force: true },
    );
    assert.equal(forced.data?.k, 'w');
    assert.throws(() => client.patch(ConfigMaps, ref, {}, { type: 'apply' }), /fieldManager/);
  });

  test('status and scale subresources of a custom resource', async () => {
    const w = await client.create(Widgets, {
      metadata: { name: 'w1', namespace: 'c' },
      spec: { replicas: 2, color: 'red' },
    });
    // update() ignores status when the kind has a status subresource …
    const ignored = await client.update(Widgets, { ...w, status: { phase: 'Ready' } });
    assert.equal(ignored.status, undefined);
    // … updateStatus / patchStatus write it
    const st = await client.updateStatus(Widgets, {
      ...ignored,
      status: { phase: 'Ready', replicas: 2, selector: 'app=w1' },
    });
    assert.equal(st.status?.phase, 'Ready');
    const ps = await client.patchStatus(Widgets, { namespace: 'c', name: 'w1' }, { status: { phase: 'Scaling' } });
    assert.equal(ps.status?.phase, 'Scaling');
    assert.equal(ps.spec?.color, 'red');
    const scale = await client.getScale(Widgets, { namespace: 'c', name: 'w1' });
    assert.equal(scale.spec?.replicas, 2);
    assert.equal(scale.status?.selector, 'app=w1');
    await client.scale(Widgets, { namespace: 'c', name: 'w1' }, 5);
    assert.equal((await client.get(Widgets, { namespace: 'c', name: 'w1' })).spec?.replicas, 5);
  });

  test('lists are paginated and complete; kind and apiVersion are filled in; selectors filter on the server', async () => {
    await Promise.all(
      Array.from({ length: 23 }, (_, i) =>
        client.create(ConfigMaps, {
          metadata: { name: `page-${i}`, namespace: 'c', labels: { page: i % 2 ? 'odd' : 'even' } },
        }),
      ),
    );
    const pages: number[] = [];
    for await (const page of client.listPages(ConfigMaps, { namespace: 'c', labelSelector: 'page', pageSize: 10 })) {
      pages.push(page.items.length);
    }
    assert.deepEqual(pages, [10, 10, 3]);
    const all = await client.list(ConfigMaps, { namespace: 'c', labelSelector: 'page=odd', pageSize: 4 });
    assert.equal(all.items.length, 11);
    assert.ok(all.metadata.resourceVersion);
    assert.ok(all.items.every((i) => i.kind === 'ConfigMap' && i.apiVersion === 'v1'));
    const everywhere = await client.list(Pods);
    assert.ok(Array.isArray(everywhere.items));
  });

  test('delete with foreground propagation waits for the owned objects', async () => {
    const owner = await client.create(ConfigMaps, { metadata: { name: 'fg-owner', namespace: 'c' } });
    await client.create(ConfigMaps, {
      metadata: {
        name: 'fg-child',
        namespace: 'c',
        ownerReferences: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            name: 'fg-owner',
            uid: owner.metadata.uid as string,
            blockOwnerDeletion: true,
          },
        ],
      },
    });
    await client.delete(ConfigMaps, { namespace: 'c', name: 'fg-owner' }, { propagationPolicy: 'Foreground' });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await client.get(ConfigMaps, { namespace: 'c', name: 'fg-child' }).catch((e: unknown) => e);
      if (isApiError(res, 'NotFound')) break;
      assert.ok(Date.now() < deadline, 'the child was collected');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  test('Forbidden for a ServiceAccount without RBAC; Unauthorized for a bad token; the user agent names opkit', async () => {
    const sa = await env.kubeconfigFor({ namespace: 'c', name: 'nobody' });
    const saClient = await RuntimeClient.create({ path: sa.path });
    await assert.rejects(
      saClient.list(ConfigMaps, { namespace: 'c' }),
      (e) => isApiError(e, 'Forbidden') && e.status === 403,
    );
    saClient.close();
    const config = await loadConfig({ path: sa.path });
    const bad = new RuntimeClient({
      ...config,
      auth: { credentials: async () => ({ headers: { authorization: 'Bearer nope' } }), invalidate: () => {} },
    });
    await assert.rejects(bad.list(ConfigMaps, { namespace: 'c' }), (e) => isApiError(e, 'Unauthorized'));
    bad.close();
    const ev = await client.create(ConfigMaps, { metadata: { name: 'ua', namespace: 'c' }, data: { a: '1' } });
    const manager = ev.metadata.managedFields?.[0]?.manager;
    assert.equal(manager, 'opkit', 'the apiserver derives the field manager from the user agent');
  });

  test('permission resourceNames: the generated RBAC lets the operator read and write its Secret, and no other', async () => {
    const { clusterRole, clusterRoleBinding, serviceAccount } = rbacManifests('narrow', 'c', [
      permission(Secrets, ['get', 'update', 'patch'], { resourceNames: ['app-cfg'] }),
    ]);
    await client.create(ServiceAccounts, serviceAccount as never);
    await client.create(ClusterRoles, clusterRole as never);
    await client.create(ClusterRoleBindings, clusterRoleBinding as never);
    for (const name of ['app-cfg', 'someone-elses']) {
      await client.create(Secrets, { metadata: { name, namespace: 'c' }, stringData: { k: 'v' } });
    }
    const sa = await env.kubeconfigFor({ namespace: 'c', name: 'narrow' });
    const narrow = await RuntimeClient.create({ path: sa.path });
    try {
      const mine = await waitFor('the binding to take effect', async () =>
        narrow.get(Secrets, { namespace: 'c', name: 'app-cfg' }).catch(() => undefined),
      );
      await narrow.patch(Secrets, { namespace: 'c', name: 'app-cfg' }, { metadata: { labels: { seen: 'yes' } } });
      assert.ok(mine.data?.k);
      for (const denied of [
        () => narrow.get(Secrets, { namespace: 'c', name: 'someone-elses' }),
        () => narrow.patch(Secrets, { namespace: 'c', name: 'someone-elses' }, { metadata: { labels: { x: 'y' } } }),
        () => narrow.list(Secrets, { namespace: 'c' }),
        () => narrow.create(Secrets, { metadata: { name: 'new', namespace: 'c' } }),
      ]) {
        await assert.rejects(denied(), (e) => isApiError(e, 'Forbidden'));
      }
    } finally {
      narrow.close();
    }
  });

  test('an optional client-side rate limit spaces requests (off by default)', async () => {
    const config = await loadConfig({ path: env.kubeconfigPath });
    const limited = new RuntimeClient(config, { qps: 10, burst: 1 });
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 6 }, () => limited.get(Namespaces, { name: 'default' })));
    const elapsed = performance.now() - t0;
    limited.close();
    assert.ok(elapsed >= 450, `6 requests at 10 qps with burst 1 take ≥ 0.5 s, took ${Math.round(elapsed)} ms`);
  });

  test('a request to an unreachable server fails fast with a Network error', async () => {
    const config = await loadConfig({ path: env.kubeconfigPath });
    const dead = new RuntimeClient({ ...config, server: 'https://127.0.0.1:1' });
    await assert.rejects(dead.get(Namespaces, { name: 'default' }), (e) => isApiError(e, 'Network') && e.retryable);
    dead.close();
  });
});
