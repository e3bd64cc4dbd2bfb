/**
 * Status writes against a real apiserver: a field dropped from the desired status — nested ones too — is removed
 * from the server, through `updateStatusIfChanged` and `ctx.status` alike, and a status the server has is not
 * written again.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Cache } from '../src/cache/index.ts';
import { CustomResourceDefinitions, Namespaces } from '../src/client/builtins.ts';
import { type Client, resource } from '../src/client/index.ts';
import { ControllerBuilder } from '../src/controller/index.ts';
import { updateStatusIfChanged } from '../src/helpers/index.ts';
import { done, type KubeObject } from '../src/index.ts';
import { waitFor, widgetControlPlane } from './support.ts';

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
  await waitFor('the Probe CRD to be served', async () => {
    try {
      await client.list(Probes, { namespace: 'default' });
      return true;
    } catch {
      return false;
    }
  });
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
});
