/**
 * Status writes against a real apiserver: a field dropped from the desired status — nested ones too — is removed
 * from the server, through `updateStatusIfChanged` and `ctx.status` alike, and a status the server has is not
 * written again. A custom kind's status is written by update, leaving everything else of the object and its field
 * ownership as they were; a stale object's update falls back to a merge patch at once, and so does a kind whose
 * status the RBAC lets be patched only.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Type } from '@sinclair/typebox';
import { Cache } from '../src/cache/index.ts';
import { CustomResourceDefinitions, Namespaces } from '../src/client/builtins.ts';
import { type Client, Client as KubeClient, loadConfig, resource } from '../src/client/index.ts';
import { RoleBindings, Roles } from '../src/client/kinds/rbac.ts';
import type { Transport } from '../src/client/transport.ts';
import { ControllerBuilder } from '../src/controller/index.ts';
import { defineKind } from '../src/crd/kind.ts';
import { updateStatusIfChanged } from '../src/helpers/index.ts';
import { done, type KubeObject } from '../src/index.ts';
import { waitFor, waitServed, widgetControlPlane } from './support.ts';

interface Probe extends KubeObject {
  spec?: { secondary?: boolean };
  status?: {
    observedGeneration?: number;
    endpoints?: { primary?: string; secondary?: string };
    ports?: number[];
  };
}

const Probes = resource<Probe>({
  group: 'test.opkit.dev',
  version: 'v1',
  kind: 'Probe',
  plural: 'probes',
  namespaced: true,
});

async function installProbeCrd(client: Client): Promise<void> {
  await client.create(CustomResourceDefinitions, {
    metadata: { name: 'probes.test.opkit.dev' },
    spec: {
      group: 'test.opkit.dev',
      names: { kind: 'Probe', plural: 'probes', singular: 'probe', listKind: 'ProbeList' },
      scope: 'Namespaced',
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', properties: { secondary: { type: 'boolean' } } },
                status: {
                  type: 'object',
                  properties: {
                    observedGeneration: { type: 'integer' },
                    endpoints: {
                      type: 'object',
                      properties: { primary: { type: 'string' }, secondary: { type: 'string' } },
                    },
                    ports: { type: 'array', items: { type: 'integer' } },
                  },
                },
              },
            },
          },
        },
      ],
    },
  });
  await waitServed(client, Probes);
}

const Gauges = defineKind({
  group: 'test.opkit.dev',
  version: 'v1',
  kind: 'Gauge',
  plural: 'gauges',
  spec: Type.Object({ size: Type.Integer(), tags: Type.Optional(Type.Array(Type.String())) }),
  status: Type.Object({ level: Type.Optional(Type.Integer()), note: Type.Optional(Type.String()) }),
  subresources: { status: true },
});

/** The methods of the status requests `client` sends from now on, with their answers' codes. */
function statusRequests(client: Client): string[] {
  const seen: string[] = [];
  const transport = client.transport as Transport;
  const request = transport.request.bind(transport);
  transport.request = async <T>(req: Parameters<Transport['request']>[0]): Promise<T> => {
    const status = req.path.endsWith('/status');
    try {
      const out = await request<T>(req);
      if (status) seen.push(req.method);
      return out;
    } catch (err) {
      if (status) seen.push(`${req.method} ${(err as { code?: string }).code}`);
      throw err;
    }
  };
  return seen;
}

describe('status writes against a real apiserver', () => {
  const plane = widgetControlPlane();
  let client: Client;
  before(async () => {
    client = plane.client;
    await installProbeCrd(client);
  });

  test('updateStatusIfChanged: a nested field dropped from the desired status is gone from the server', async () => {
    await client.create(Namespaces, { metadata: { name: 'status-helper' } });
    const ref = { namespace: 'status-helper', name: 'p' };
    const created = await client.create(Probes, { metadata: ref });
    const both = { endpoints: { primary: 'p:80', secondary: 's:80' }, ports: [80, 443] };
    assert.ok(await updateStatusIfChanged(client, Probes, created, both), 'written');
    const read = await client.get(Probes, ref);
    assert.deepEqual(read.status, both);
    const one = { endpoints: { primary: 'p:80' }, ports: [80] };
    assert.ok(await updateStatusIfChanged(client, Probes, read, one), 'written');
    const after = await client.get(Probes, ref);
    assert.deepEqual(after.status, one, 'endpoints.secondary removed, ports replaced whole');
    assert.equal(await updateStatusIfChanged(client, Probes, after, one), undefined, 'nothing left to write');
  });

  test('ctx.status: a nested field the reconciler stops reporting is removed; a known status is not rewritten', async () => {
    await client.create(Namespaces, { metadata: { name: 'status-ctx' } });
    const ref = { namespace: 'status-ctx', name: 'p' };
    let writes = 0;
    let reconciles = 0;
    const c = new ControllerBuilder({ client, cache: new Cache({ client, namespace: 'status-ctx' }) })
      .for(Probes)
      .reconcile(async (p, ctx) => {
        reconciles += 1;
        const endpoints = { primary: 'p:80', ...(p.spec?.secondary ? { secondary: 's:80' } : {}) };
        if (await ctx.status({ observedGeneration: p.metadata.generation ?? 0, endpoints })) writes += 1;
        return done();
      });
    const stop = plane.stopper();
    void c.start(stop.signal);
    await client.create(Probes, { metadata: ref, spec: { secondary: true } });
    await waitFor('status with both endpoints', async () => {
      const p = await client.get(Probes, ref);
      return p.status?.endpoints?.secondary === 's:80';
    });
    await client.patch(Probes, ref, { spec: { secondary: false } });
    const observed = await waitFor('status of generation 2', async () => {
      const p = await client.get(Probes, ref);
      return p.status?.observedGeneration === 2 ? p : undefined;
    });
    assert.deepEqual(observed.status?.endpoints, { primary: 'p:80' }, 'endpoints.secondary removed from the server');
    await new Promise((r) => setTimeout(r, 500)); // the write's own event reconciles once more
    const written = writes;
    const seen = reconciles;
    for (let i = 0; i < 3; i++) c.enqueue(ref);
    await waitFor('another reconcile', async () => reconciles > seen);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(writes, written, 'the status the server has is not written again');
    stop.abort();
  });

  test("a custom kind's status is updated: nothing else of the object changes, a stale object falls back to a merge patch", async () => {
    await client.create(CustomResourceDefinitions, Gauges.crd());
    await waitServed(client, Gauges);
    await client.create(Namespaces, { metadata: { name: 'status-update' } });
    const ref = { namespace: 'status-update', name: 'g' };
    const created = await client.create(
      Gauges,
      {
        metadata: { ...ref, labels: { a: 'b' }, annotations: { n: 'ñ ✓' }, finalizers: ['test.opkit.dev/keep'] },
        spec: { size: 3, tags: ['x'] },
      },
      { fieldManager: 'author' },
    );
    const seen = statusRequests(client);
    const written = await updateStatusIfChanged(client, Gauges, created, { level: 1, note: 'first' });
    assert.deepEqual(seen, ['PUT'], 'an update of the status subresource');
    const read = await client.get(Gauges, ref);
    assert.deepEqual(read.status, { level: 1, note: 'first' });
    assert.deepEqual(read.spec, { size: 3, tags: ['x'] });
    assert.deepEqual(read.metadata.labels, { a: 'b' });
    assert.deepEqual(read.metadata.annotations, { n: 'ñ ✓' });
    assert.deepEqual(read.metadata.finalizers, ['test.opkit.dev/keep']);
    // the field manager compares the object sent with the stored one: the author keeps its metadata too
    const authorOwns = (obj: typeof read) => {
      const owned = JSON.stringify(obj.metadata.managedFields?.find((m) => m.manager === 'author')?.fieldsV1);
      for (const f of ['f:size', 'f:labels', 'f:annotations', 'f:finalizers'])
        assert.ok(owned?.includes(f), `the author still owns ${f}: ${owned}`);
    };
    authorOwns(read);
    assert.equal(written?.metadata.resourceVersion, read.metadata.resourceVersion);

    // a second write from the same (now older) object uses the resourceVersion its first write made
    assert.ok(await updateStatusIfChanged(client, Gauges, created, { level: 2 }));
    assert.deepEqual(seen, ['PUT', 'PUT']);
    const second = await client.get(Gauges, ref);
    assert.deepEqual(second.status, { level: 2 }, 'note removed: the status is replaced');
    authorOwns(second);

    // someone else moved the object on: the update meets a Conflict and a merge patch writes the status at once
    const stale = await client.get(Gauges, ref);
    await client.patch(Gauges, ref, { spec: { size: 4 } });
    assert.ok(await updateStatusIfChanged(client, Gauges, stale, { level: 3, note: 'late' }));
    assert.deepEqual(seen, ['PUT', 'PUT', 'PUT Conflict', 'PATCH']);
    // that object is not what is stored any more: its next status goes as a merge patch too, claiming no version
    assert.ok(await updateStatusIfChanged(client, Gauges, stale, { level: 4 }));
    assert.deepEqual(seen.slice(4), ['PATCH']);
    const after = await client.get(Gauges, ref);
    assert.deepEqual(after.status, { level: 4 });
    assert.equal(after.spec.size, 4);
    await client.patch(Gauges, ref, { metadata: { finalizers: null } });
  });

  test('a kind whose status the RBAC lets be patched only is merge-patched after one Forbidden update', async () => {
    await client.create(Namespaces, { metadata: { name: 'status-rbac' } });
    const ref = { namespace: 'status-rbac', name: 'g' };
    await client.create(Roles, {
      metadata: { namespace: ref.namespace, name: 'gauge-status-patch' },
      rules: [
        { apiGroups: ['test.opkit.dev'], resources: ['gauges'], verbs: ['get', 'create'] },
        { apiGroups: ['test.opkit.dev'], resources: ['gauges/status'], verbs: ['patch'] },
      ],
    });
    await client.create(RoleBindings, {
      metadata: { namespace: ref.namespace, name: 'gauge-status-patch' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'gauge-status-patch' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'patcher' }],
    });
    const base = await loadConfig({ path: plane.env.kubeconfigPath });
    const patcher = new KubeClient({ ...base, impersonate: { user: 'patcher' } });
    try {
      const created = await waitFor('the Role to take effect', () =>
        patcher.create(Gauges, { metadata: ref, spec: { size: 1 } }).catch(() => undefined),
      );
      const seen = statusRequests(patcher);
      assert.ok(await updateStatusIfChanged(patcher, Gauges, created, { level: 1 }));
      assert.ok(await updateStatusIfChanged(patcher, Gauges, await patcher.get(Gauges, ref), { level: 2 }));
      assert.deepEqual(seen, ['PUT Forbidden', 'PATCH', 'PATCH'], 'one Forbidden update, then merge patches');
      assert.deepEqual((await client.get(Gauges, ref)).status, { level: 2 });
    } finally {
      patcher.close();
    }
  });
});
