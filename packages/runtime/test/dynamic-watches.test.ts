/**
 * Dynamic watches against a real apiserver, as an operator whose custom resource names the kinds to watch: a Widget's
 * annotation lists `apiVersion/Kind`s, its reconcile finds them by discovery (`kindFor`) and watches them
 * (`ctx.watchKinds`). A kind is watched, unwatched and watched again, with the cache's informers and
 * `opkit_cache_objects` checked each time; a change of a watched kind reconciles the Widgets naming it, and of an
 * unwatched kind none, and of objects outside a request's label filter none; the kinds go with the Widget; a kind
 * the operator may not list, or may list but not watch, fails at once, naming it, and a kind not served, or named
 * twice, fails naming it too. The controller runs as a user with RBAC on what it may watch.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Cache } from '../src/cache/index.ts';
import { ClusterRoleBindings, ClusterRoles, Namespaces, Secrets } from '../src/client/builtins.ts';
import { Client, type Kind, kindFor, loadConfig } from '../src/client/index.ts';
import { ControllerBuilder, type DynamicWatch } from '../src/controller/index.ts';
import { done } from '../src/index.ts';
import { Metrics } from '../src/metrics.ts';
import { parseMetrics } from './metrics-parse.ts';
import { type Widget, Widgets, waitFor, widgetControlPlane } from './support.ts';

const NS = 'dyn';
const ANNOTATION = 'test.opkit.dev/watch';
const USER = 'dynamic-operator';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dynamic watches', () => {
  const plane = widgetControlPlane();
  let client: Client;
  before(async () => {
    ({ client } = plane);
    await client.create(Namespaces, { metadata: { name: NS } });
    // the operator may watch Widgets, Secrets and Services; not ConfigMaps
    await client.create(ClusterRoles, {
      metadata: { name: USER },
      rules: [
        { apiGroups: ['test.opkit.dev'], resources: ['widgets'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['secrets', 'services'], verbs: ['list', 'watch'] },
        { apiGroups: [''], resources: ['podtemplates'], verbs: ['list'] }, // list, not watch
        { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      ],
    });
    await client.create(ClusterRoleBindings, {
      metadata: { name: USER },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: USER },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: USER }],
    });
  });

  test('a kind is watched, unwatched and watched again; the informer goes with its last watch', async () => {
    const base = await loadConfig({ path: plane.env.kubeconfigPath });
    const operator = new Client({ ...base, impersonate: { user: USER } }, { name: 'dynamic-operator' });
    await waitFor('the RBAC to take effect', () =>
      operator.list(Widgets, { namespace: NS }).then(
        () => true,
        () => false,
      ),
    );
    const secret = (name: string) =>
      client.create(Secrets, { metadata: { namespace: NS, name }, stringData: { k: 'ü' } });
    await secret('s1');
    await secret('s2');
    const widget = (name: string, watch: string) =>
      client.create(Widgets, { metadata: { namespace: NS, name, annotations: { [ANNOTATION]: watch } } });

    /** Per Widget: how many objects of each kind it names its namespace held at its last reconcile, or its error. */
    const seen = new Map<string, Record<string, number> | string>();
    const reconciles = new Map<string, number>();
    const metrics = new Metrics({ processMetrics: false });
    const cache = new Cache({ client: operator, metrics, namespace: NS });
    const c = new ControllerBuilder({ client: operator, cache, metrics })
      .for(Widgets)
      .withOptions({ cacheSyncTimeoutMs: 20_000 })
      .reconcile(async (w: Widget, ctx) => {
        const name = w.metadata.name ?? '';
        reconciles.set(name, (reconciles.get(name) ?? 0) + 1);
        try {
          // `apiVersion/Kind`, or `apiVersion/Kind|selector` for only the changes of objects it matches
          const named = (w.metadata.annotations?.[ANNOTATION] ?? '').split(',').filter(Boolean);
          const kinds: Kind[] = [];
          const watches: DynamicWatch[] = [];
          for (const n of named) {
            const [what = '', labelSelector] = n.split('|');
            const at = what.lastIndexOf('/');
            const kind = await kindFor(ctx.rawClient, what.slice(0, at), what.slice(at + 1));
            kinds.push(kind);
            watches.push(labelSelector ? { kind, labelSelector } : kind);
          }
          await ctx.watchKinds(watches);
          const counts: Record<string, number> = {};
          for (const k of kinds) counts[k.plural] = (await ctx.cache.list(k, { namespace: NS })).length;
          seen.set(name, counts);
        } catch (err) {
          seen.set(name, `${(err as { code?: string }).code}: ${(err as Error).message}`);
        }
        return done();
      });
    const stop = plane.stopper();
    const running = c.start(stop.signal);
    const informers = () => cache.informers().map((i) => i.resource.plural);
    const cached = () => {
      const m = parseMetrics(metrics.text());
      return Object.fromEntries(
        ['secrets', 'services', 'widgets.test.opkit.dev'].map((r) => [
          r,
          m.get(`opkit_cache_objects{resource="${r}"}`),
        ]),
      );
    };
    const expect = (name: string, want: Record<string, number> | RegExp) =>
      waitFor(`${name}: ${want}`, async () => {
        const got = seen.get(name);
        return want instanceof RegExp
          ? typeof got === 'string' && want.test(got)
          : JSON.stringify(got) === JSON.stringify(want);
      }).catch((err: unknown) => {
        throw new Error(`${name}: wanted ${want}, last seen ${JSON.stringify(seen.get(name))}`, { cause: err });
      });
    try {
      await widget('w1', 'v1/Secret');
      await expect('w1', { secrets: 2 });
      assert.deepEqual(informers().sort(), ['secrets', 'widgets']);
      assert.equal(cached().secrets, 2);
      const held = cache.informers().find((i) => i.resource.plural === 'secrets');

      await secret('s3'); // a change of a watched kind reconciles the Widget that names it
      await expect('w1', { secrets: 3 });

      await widget('w2', 'v1/Secret,v1/Service'); // a second Widget naming the same kind, and another
      await expect('w2', { secrets: 3, services: 0 });
      assert.deepEqual(informers().sort(), ['secrets', 'services', 'widgets']);

      await client.patch(Widgets, { namespace: NS, name: 'w1' }, { metadata: { annotations: { [ANNOTATION]: '' } } });
      await expect('w1', {});
      assert.deepEqual(informers().sort(), ['secrets', 'services', 'widgets'], 'w2 still names Secrets');

      await client.delete(Widgets, { namespace: NS, name: 'w2' }); // its kinds go with it
      await waitFor(
        'the informers of Secrets and Services stopped and emptied',
        async () => informers().length === 1 && held?.store.size === 0,
      );
      assert.deepEqual(informers(), ['widgets']);
      assert.deepEqual(cached(), { secrets: undefined, services: undefined, 'widgets.test.opkit.dev': 1 });
      assert.equal(held?.store.size, 0, 'the stopped informer dropped its objects');
      assert.equal(cache.synced, true);

      const before = reconciles.get('w1') ?? 0;
      await secret('s4'); // an unwatched kind reconciles nothing
      await sleep(1_500);
      assert.equal(reconciles.get('w1'), before);

      await client.patch(
        Widgets,
        { namespace: NS, name: 'w1' },
        { metadata: { annotations: { [ANNOTATION]: 'v1/Secret' } } },
      );
      await expect('w1', { secrets: 4 }); // watched again: listed again
      assert.equal(cached().secrets, 4);
      assert.notEqual(
        cache.informers().find((i) => i.resource.plural === 'secrets'),
        held,
        'a new informer',
      );

      // a filter: only the changes of Secrets labelled tier=db reconcile w6
      await widget('w6', 'v1/Secret|tier=db');
      await expect('w6', { secrets: 4 });
      const w6 = reconciles.get('w6') ?? 0;
      await secret('s5'); // no label
      await sleep(1_500);
      assert.equal(reconciles.get('w6'), w6, 'a change outside the filter does not reconcile it');
      await client.create(Secrets, { metadata: { namespace: NS, name: 's6', labels: { tier: 'db' } } });
      await expect('w6', { secrets: 6 });
      await client.delete(Widgets, { namespace: NS, name: 'w6' });

      // a kind the operator may not list fails at once, naming it; the kinds it may watch stay watched
      const t0 = performance.now();
      await widget('w3', 'v1/Secret,v1/ConfigMap');
      await expect('w3', /^WatchRefused: configmaps: the apiserver refused to list or watch it \(Forbidden/);
      assert.ok(performance.now() - t0 < 10_000, `refused after ${Math.round(performance.now() - t0)} ms`);
      assert.deepEqual(informers().sort(), ['secrets', 'widgets'], 'ConfigMaps are not watched; Secrets are');
      assert.equal(cache.synced, true, 'readiness does not wait for a kind a Widget named');

      // a kind it may list but not watch is refused too, as soon as its streaming list is
      await widget('w7', 'v1/PodTemplate');
      await expect('w7', /^WatchRefused: podtemplates: the apiserver refused to list or watch it \(Forbidden/);
      assert.deepEqual(informers().sort(), ['secrets', 'widgets'], 'PodTemplates are not watched');
      // a kind named twice in one call
      await widget('w8', 'v1/Secret,v1/Secret|a=b');
      await expect('w8', /^InvalidArgument: watchKinds names secrets twice/);

      // a kind the apiserver does not serve fails naming it, before any watch
      await widget('w4', 'example.com/v1/Nope');
      await expect('w4', /^KindNotServed: the apiserver does not serve kind Nope in example\.com\/v1/);
      await widget('w5', 'a/b/c/Nope');
      await expect('w5', /^InvalidApiVersion: "a\/b\/c" does not name a kind/);
    } finally {
      stop.abort();
      await running;
      operator.close();
    }
    assert.deepEqual(
      cache.informers().map((i) => i.resource.plural),
      ['widgets'],
      'the controller stopped: its kinds released',
    );
  });
});
