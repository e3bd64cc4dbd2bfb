/**
 * The protobuf encoding against the real apiserver: every listable built-in resource it serves, read at one
 * resourceVersion as JSON and as protobuf, decodes to the same objects; gets, watches and the cache give what they give
 * over JSON, with objects big enough to span many network chunks and non-ASCII text; and the client really spoke
 * protobuf (no kind fell back to JSON).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Environment } from '@opkit/testenv';
import { waitFor } from '@opkit/testenv';
import { Cache, keepFields } from '../src/cache/index.ts';
import { ConfigMaps, Namespaces, Pods, Secrets } from '../src/client/builtins.ts';
import { Client, type Kind, resource } from '../src/client/index.ts';
import { hasDecoder, load, PROTOBUF } from '../src/client/protobuf/codec.ts';
import type { KubeObject } from '../src/index.ts';
import { startEnv } from './support.ts';

interface DiscoveredResource {
  name: string;
  kind: string;
  namespaced: boolean;
  verbs: string[];
}

const NS = 'pb';
const TEXT = 'héllo — 日本語 — 😀 — Ünïcödé';

describe('protobuf against a real apiserver', () => {
  let env: Environment;
  let json: Client;
  let proto: Client;
  before(async () => {
    const started = await startEnv(2);
    env = started.env;
    json = new Client(started.config, { name: 'pb-json', protobuf: false });
    proto = new Client(started.config, { name: 'pb-proto' });
    started.client.close();
    await json.create(Namespaces, { metadata: { name: NS, annotations: { team: TEXT } } });
    // objects of many shapes: big (over 1 MiB across many chunks), non-ASCII, binary data, every quantity form
    await json.create(ConfigMaps, {
      metadata: { name: 'big', namespace: NS, annotations: { note: TEXT } },
      data: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, `${TEXT} ${i} `.repeat(400)])),
      binaryData: { blob: Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 256)).toString('base64') },
    });
    await json.create(Secrets, {
      metadata: { name: 's', namespace: NS },
      type: 'Opaque',
      data: { password: Buffer.from(`${TEXT}\u0000\u00ff`).toString('base64') },
    });
    for (let i = 0; i < 30; i++) {
      await json.create(Pods, {
        metadata: {
          name: `pod-${i}`,
          namespace: NS,
          labels: { app: 'pb', index: String(i) },
          annotations: { note: `${TEXT} `.repeat(i * 40) },
        },
        spec: {
          containers: [
            {
              name: 'c',
              image: 'registry.example/app:1',
              args: ['--flag', TEXT],
              env: [{ name: 'GREETING', value: TEXT }],
              resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '1.5', memory: '1G' } },
              ports: [{ containerPort: 8080 + i, protocol: 'TCP' }],
            },
          ],
          terminationGracePeriodSeconds: 0,
        },
      });
    }
    // wait for the scheduler and kwok to give the pods nodes and status
    await waitFor('the pods running', async () => {
      const pods = await json.list(Pods, { namespace: NS });
      return pods.items.filter((p) => p.status?.phase === 'Running').length === 30;
    });
  });
  after(async () => {
    json?.close();
    proto?.close();
    await env?.stop();
  });

  test('every listable built-in resource decodes from protobuf to the JSON objects, at one resourceVersion', async () => {
    const resources = await discover(json);
    const compared: string[] = [];
    const skipped: string[] = [];
    for (const r of resources) {
      if (!hasDecoder(r.apiVersion, r.kind)) {
        skipped.push(`${r.apiVersion} ${r.kind}`);
        continue;
      }
      const path = r.group === '' ? `/api/${r.version}/${r.plural}` : `/apis/${r.group}/${r.version}/${r.plural}`;
      const first = await json.transport.request<{ metadata: { resourceVersion: string } }>({
        method: 'GET',
        path,
        query: { limit: 1 },
      });
      // one snapshot for both reads (a resource not kept in etcd, as componentstatuses, has no resourceVersion)
      const rv = first.metadata.resourceVersion;
      const query = rv ? { resourceVersion: rv, resourceVersionMatch: 'Exact' } : {};
      const fromJson = await json.transport.request<unknown>({ method: 'GET', path, query });
      await load(r.apiVersion, r.kind, `${r.kind}List`);
      const fromProto = await proto.transport.request<unknown>({
        method: 'GET',
        path,
        query,
        accept: PROTOBUF, // protobuf only: an apiserver that cannot answer in it refuses (406)
      });
      // (without a snapshot, as componentstatuses' live probes, the order of the items is not fixed)
      assert.deepStrictEqual(rv ? fromProto : sorted(fromProto), rv ? fromJson : sorted(fromJson), r.plural);
      compared.push(`${r.apiVersion} ${r.kind}`);
    }
    assert.ok(compared.length > 40, `compared ${compared.length}: ${compared.join(', ')}`);
    for (const kind of [
      'v1 Pod',
      'v1 ConfigMap',
      'v1 Node',
      'v1 Event',
      'apps/v1 Deployment',
      'coordination.k8s.io/v1 Lease',
    ])
      assert.ok(compared.includes(kind), `${kind} was compared`);
    // only custom resources (none here) and the kinds without a protobuf encoding may be skipped
    assert.deepEqual(
      skipped.filter((k) => !k.startsWith('apiextensions.k8s.io/') && !k.startsWith('apiregistration.k8s.io/')),
      [],
    );
  });

  test('the client’s get, paged list and watch give the same objects over protobuf as over JSON', async () => {
    const ref = { namespace: NS, name: 'big' };
    assert.deepStrictEqual(await proto.get(ConfigMaps, ref), await json.get(ConfigMaps, ref));
    assert.deepStrictEqual(
      await proto.get(Secrets, { namespace: NS, name: 's' }),
      await json.get(Secrets, { namespace: NS, name: 's' }),
    );
    const pages = [];
    for await (const page of proto.listPages(Pods, { namespace: NS, pageSize: 7 })) pages.push(page.items.length);
    assert.deepEqual(pages, [7, 7, 7, 7, 2]);

    const start = (await json.list(Pods, { namespace: NS })).metadata.resourceVersion;
    const events = async (client: Client) => {
      const stop = new AbortController();
      const seen: string[] = [];
      const objects: KubeObject[] = [];
      for await (const e of client.watch(Pods, {
        namespace: NS,
        resourceVersion: start,
        timeoutSeconds: 30,
        inactivityTimeoutMs: 20_000,
        signal: stop.signal,
      })) {
        if (e.type === 'BOOKMARK') continue;
        seen.push(`${e.type} ${e.object.metadata.name} ${e.object.metadata.labels?.changed ?? ''}`);
        objects.push(e.object);
        if (e.type === 'DELETED') break;
      }
      return { seen, objects };
    };
    const watching = [events(proto), events(json)];
    await json.patch(Pods, { namespace: NS, name: 'pod-3' }, { metadata: { labels: { changed: 'yes' } } });
    await json.patch(
      Pods,
      { namespace: NS, name: 'pod-3' },
      { metadata: { annotations: { note: TEXT.repeat(2000) } } },
    );
    await json.delete(Pods, { namespace: NS, name: 'pod-29' }, { gracePeriodSeconds: 0 });
    const [fromProto, fromJson] = await Promise.all(watching);
    assert.ok(fromProto && fromJson);
    assert.deepEqual(fromProto.seen, fromJson.seen);
    assert.ok(
      fromProto.seen.some((s) => s.startsWith('DELETED pod-29')),
      fromProto.seen.join('\n'),
    );
    assert.deepStrictEqual(fromProto.objects, fromJson.objects);
  });

  test('a cache over protobuf holds what a cache over JSON holds, with keepFields applied while decoding', async () => {
    const stop = new AbortController();
    try {
      const caches = [proto, json].map((client) => {
        const cache = new Cache({ client, namespace: NS });
        cache.transform(Pods, keepFields('status.phase', 'spec.containers.image', 'spec.nodeName'));
        cache.start(stop.signal);
        return cache;
      });
      const [a, b] = await Promise.all(caches.map((c) => c.list(Pods)));
      const byName = (xs: readonly KubeObject[]) =>
        [...xs].sort((x, y) => (x.metadata.name ?? '').localeCompare(y.metadata.name ?? ''));
      assert.deepStrictEqual(byName(a ?? []), byName(b ?? []));
      const one = byName(a ?? [])[0] as KubeObject & { spec?: object; status?: object };
      assert.equal(one.metadata.managedFields, undefined);
      assert.deepEqual(Object.keys(one.status ?? {}), ['phase']);
      const spec = one.spec as { containers?: unknown; nodeName?: string } | undefined;
      assert.deepEqual(Object.keys(spec ?? {}).sort(), ['containers', 'nodeName']);
      assert.deepEqual(spec?.containers, [{ image: 'registry.example/app:1' }]);
      const [c, d] = await Promise.all(caches.map((x) => x.list(ConfigMaps)));
      assert.deepStrictEqual(byName(c ?? []), byName(d ?? []));
      assert.ok(byName(c ?? []).every((x) => x.metadata.managedFields === undefined));
    } finally {
      stop.abort();
    }
  });

  test('no kind fell back to JSON: protobuf was decoded throughout', () => {
    for (const [apiVersion, kind] of [
      ['v1', 'Pod'],
      ['v1', 'ConfigMap'],
      ['v1', 'Secret'],
      ['v1', 'Node'],
      ['apps/v1', 'Deployment'],
    ] as const)
      assert.ok(hasDecoder(apiVersion, kind), `${apiVersion} ${kind} still read as protobuf`);
  });
});

/** A list with its items in name order. */
function sorted(list: unknown): unknown {
  const l = list as { items: KubeObject[] };
  const name = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name ?? ''}`;
  return { ...l, items: [...l.items].sort((a, b) => name(a).localeCompare(name(b))) };
}

/** Every resource the apiserver serves that can be listed, from discovery, each as a `Kind`. */
async function discover(client: Client): Promise<Kind[]> {
  const versions = ['v1'];
  const groups = await client.transport.request<{ groups: { versions: { groupVersion: string }[] }[] }>({
    method: 'GET',
    path: '/apis',
  });
  for (const g of groups.groups) for (const v of g.versions) versions.push(v.groupVersion);
  const kinds: Kind[] = [];
  for (const gv of versions) {
    const list = await client.transport.request<{ resources: DiscoveredResource[] }>({
      method: 'GET',
      path: gv === 'v1' ? '/api/v1' : `/apis/${gv}`,
    });
    const [group, version] = gv.includes('/') ? (gv.split('/') as [string, string]) : ['', gv];
    for (const r of list.resources) {
      if (r.name.includes('/') || !r.verbs.includes('list')) continue;
      kinds.push(resource({ group, version, kind: r.kind, plural: r.name, namespaced: r.namespaced }));
    }
  }
  return kinds;
}
