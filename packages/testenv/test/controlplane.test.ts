import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ApiClient, type Environment, KUBERNETES_VERSION, start } from '../src/index.ts';
import { alive, anyFieldsCrd, quiet, waitFor } from './helpers.ts';

interface Obj {
  metadata: { name: string; uid: string; namespace?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type: string; status: string }[] };
}

describe('a started control plane', () => {
  let env: Environment;
  before(async () => {
    env = await start({ log: quiet });
  });
  after(async () => {
    await env?.stop();
  });

  const createNamespace = (name: string) =>
    env.api.must({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } },
    });
  const createConfigMap = (namespace: string, metadata: Record<string, unknown>, data?: Record<string, string>) =>
    env.api.must<Obj>({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata, ...(data ? { data } : {}) },
    });
  const configMapStatus = async (name: string) =>
    (await env.api.request({ path: `/api/v1/namespaces/default/configmaps/${name}` })).status;

  /** Creates an owner with children pointing at it, deletes the owner, and waits until the children are collected. */
  async function expectGarbageCollection(owner: string, children: readonly string[]): Promise<void> {
    const created = await createConfigMap('default', { name: owner });
    const ownerReferences = [
      { apiVersion: 'v1', kind: 'ConfigMap', name: owner, uid: created.metadata.uid, blockOwnerDeletion: true },
    ];
    for (const name of children) await createConfigMap('default', { name, ownerReferences });
    await env.api.must({ method: 'DELETE', path: `/api/v1/namespaces/default/configmaps/${owner}` });
    await waitFor(
      `${children.join(', ')} to be collected`,
      async () => (await Promise.all(children.map(configMapStatus))).every((s) => s === 404),
      60_000,
    );
  }

  test('serves the pinned Kubernetes version with 3 Ready kwok nodes', async () => {
    const version = await env.api.must<{ gitVersion: string }>({ path: '/version' });
    assert.equal(version.gitVersion, KUBERNETES_VERSION);
    const nodes = await env.api.must<{ items: Obj[] }>({ path: '/api/v1/nodes' });
    assert.equal(nodes.items.length, 3);
  });

  test('a pod is scheduled to a kwok node and becomes Running and Ready', async () => {
    await env.api.must({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'web' },
        spec: { containers: [{ name: 'c', image: 'busybox', command: ['sleep', '3600'] }] },
      },
    });
    const pod = await waitFor('pod web Running and Ready', async () => {
      const p = await env.api.must<Obj>({ path: '/api/v1/namespaces/default/pods/web' });
      const ready = p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      return p.status?.phase === 'Running' && ready ? p : undefined;
    });
    assert.match(pod.spec?.nodeName ?? '', /^kwok-node-\d$/);
  });

  test('garbage collection deletes the objects owned by a deleted owner', async () => {
    await expectGarbageCollection('owner', ['child-a', 'child-b']);
  });

  test('a ServiceAccount kubeconfig is Forbidden until a RoleBinding grants access', async () => {
    await createNamespace('rbac');
    const sa = await env.kubeconfigFor({ namespace: 'rbac', name: 'reader' });
    assert.equal(sa.user, 'system:serviceaccount:rbac:reader');
    const client = new ApiClient(env.server, env.caPem, { kind: 'token', token: sa.token });
    try {
      const denied = await client.request<{ reason: string }>({ path: '/api/v1/namespaces/rbac/configmaps' });
      assert.equal(denied.status, 403);
      assert.equal(denied.body.reason, 'Forbidden');
      await env.api.must({
        method: 'POST',
        path: '/apis/rbac.authorization.k8s.io/v1/namespaces/rbac/rolebindings',
        body: {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name: 'reader-view' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
          subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'rbac' }],
        },
      });
      // RBAC changes reach the authorizer's cache within a moment.
      await waitFor('the RoleBinding to take effect', async () => {
        const res = await client.request({ path: '/api/v1/namespaces/rbac/configmaps' });
        return res.status === 200;
      });
      const write = await client.request({
        method: 'POST',
        path: '/api/v1/namespaces/rbac/configmaps',
        body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } },
      });
      assert.equal(write.status, 403, 'view grants no create');
    } finally {
      client.close();
    }
  });

  /** Installs a namespaced CRD `<plural>.gc.example.com` and waits until it is Established. */
  async function installCrd(plural: string): Promise<void> {
    await env.api.must({
      method: 'POST',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      body: anyFieldsCrd('gc.example.com', plural),
    });
    await waitFor(`${plural} to be served`, async () => {
      const r = await env.api.request({ path: `/apis/gc.example.com/v1/namespaces/default/${plural}` });
      return r.status === 200;
    });
  }

  test("a CRD installed after start: deleting an owner takes the CRD's objects at once, not after the collector's 30 s rediscovery", async () => {
    await installCrd('widgets');
    const owner = await createConfigMap('default', { name: 'widget-owner' });
    const ownerReferences = [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'widget-owner', uid: owner.metadata.uid }];
    const path = '/apis/gc.example.com/v1/namespaces/default/widgets';
    await env.api.must({
      method: 'POST',
      path,
      body: { apiVersion: 'gc.example.com/v1', kind: 'Widget', metadata: { name: 'w', ownerReferences } },
    });
    const t0 = performance.now();
    await env.api.must({ method: 'DELETE', path: '/api/v1/namespaces/default/configmaps/widget-owner' });
    await waitFor(
      'the Widget to be collected',
      async () => (await env.api.request({ path: `${path}/w` })).status === 404,
      60_000,
    );
    const took = performance.now() - t0;
    assert.ok(
      took < 10_000,
      `collected ${(took / 1000).toFixed(1)} s after its owner's deletion (the collector's rediscovery comes every 30 s)`,
    );
  });

  test('a new CRD does not start a controller-manager a test stopped; startComponent brings it back with the CRD known', async () => {
    await env.stopComponent('kube-controller-manager');
    await installCrd('gadgets');
    await new Promise((r) => setTimeout(r, 1_000));
    assert.equal(env.pids['kube-controller-manager'], undefined, 'still stopped');
    await env.startComponent('kube-controller-manager');
    assert.notEqual(env.pids['kube-controller-manager'], undefined);
    await expectGarbageCollection('owner3', ['child3']);
  });

  test('restarting the apiserver keeps the objects and clients reconnect', async () => {
    await createConfigMap('default', { name: 'survivor' }, { k: 'v' });
    const before = env.pids['kube-apiserver'];
    await env.restart('kube-apiserver', { downMs: 500 });
    assert.notEqual(env.pids['kube-apiserver'], before);
    const cm = await env.api.must<{ data: { k: string } }>({ path: '/api/v1/namespaces/default/configmaps/survivor' });
    assert.equal(cm.data.k, 'v');
    // the controller-manager reconnects too: garbage collection still works
    await expectGarbageCollection('owner2', ['child2']);
  });

  test('deleting a namespace completes (the namespace controller runs)', async () => {
    await createNamespace('doomed');
    await createConfigMap('doomed', { name: 'x' });
    await env.api.must({ method: 'DELETE', path: '/api/v1/namespaces/doomed' });
    await waitFor(
      'namespace doomed gone',
      async () => (await env.api.request({ path: '/api/v1/namespaces/doomed' })).status === 404,
    );
  });

  test('stop() ends every component and removes the run directory', async () => {
    const pids = Object.values(env.pids);
    assert.equal(pids.length, 5);
    const { access } = await import('node:fs/promises');
    await env.stop();
    for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} ended`);
    await assert.rejects(access(env.dir));
  });
});
