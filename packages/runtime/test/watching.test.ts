/**
 * Mapping watches against a real apiserver: `.watches(ConfigMaps, referencing(Widgets, 'spec.color'))` reconciles
 * exactly the Widgets whose `spec.color` names the changed ConfigMap, in its namespace — also a Widget created after
 * the ConfigMap, and, once a Widget's reference moved, by its new ConfigMap and no longer by the old (the index
 * follows the change); a cluster-scoped object (a Namespace) reconciles the Widgets of every namespace that name it.
 * An async mapper that throws is logged and counted, and the controller's other watches go on.
 */
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { Cache } from '../src/cache/index.ts';
import { ConfigMaps, Namespaces, Secrets } from '../src/client/builtins.ts';
import type { Client } from '../src/client/index.ts';
import { ControllerBuilder, referencing } from '../src/controller/index.ts';
import { done } from '../src/index.ts';
import { Metrics } from '../src/metrics.ts';
import { type LogEntry, recordingLogger, Widgets, waitFor, widgetControlPlane } from './support.ts';

describe('watching other kinds', () => {
  const plane = widgetControlPlane();
  let client: Client;
  before(() => {
    ({ client } = plane);
  });

  test('a changed ConfigMap reconciles exactly the Widgets that reference it, as references come and move', async () => {
    for (const name of ['wa', 'wb', 'teal']) await client.create(Namespaces, { metadata: { name } });
    for (const [namespace, name] of [
      ['wa', 'red'],
      ['wa', 'blue'],
      ['wb', 'red'],
    ] as const) {
      await client.create(ConfigMaps, { metadata: { namespace, name }, data: { v: '0' } });
    }
    const widget = (namespace: string, name: string, color: string) =>
      client.create(Widgets, { metadata: { namespace, name }, spec: { color } });
    await widget('wa', 'w1', 'red');
    await widget('wa', 'w2', 'blue');
    await widget('wb', 'w3', 'red'); // another namespace's "red"
    await widget('wa', 't1', 'teal'); // … and two that name a cluster-scoped object, the Namespace teal
    await widget('wb', 't2', 'teal');

    const reconciled = new Set<string>();
    const metrics = new Metrics({ processMetrics: false });
    const entries: LogEntry[] = [];
    const cache = new Cache({ client });
    const c = new ControllerBuilder({ client, cache, metrics, log: recordingLogger(entries) })
      .for(Widgets)
      .watches(ConfigMaps, referencing(Widgets, 'spec.color'))
      .watches(Namespaces, referencing(Widgets, 'spec.color'))
      .watches(Secrets, async (secret) => {
        if (secret.metadata.name === 'bad') throw new Error('this mapper fails');
        return [];
      })
      .reconcile(async (w) => {
        reconciled.add(`${w.metadata.namespace}/${w.metadata.name}`);
        return done();
      });
    const stop = plane.stopper();
    const running = c.start(stop.signal);

    /** Changes the ConfigMap (the Namespace, without a namespace) and answers the Widgets reconciled after it, once `want` were and 1 s passed. */
    const touch = async (namespace: string | undefined, name: string, want: readonly string[]) => {
      await new Promise((r) => setTimeout(r, 300)); // what an earlier change enqueued has run
      reconciled.clear();
      const v = String(Date.now());
      if (namespace) await client.patch(ConfigMaps, { namespace, name }, { data: { v } });
      else await client.patch(Namespaces, { name }, { metadata: { labels: { v } } });
      await waitFor(`${want.join(', ')} reconciled`, async () => want.every((k) => reconciled.has(k)));
      await new Promise((r) => setTimeout(r, 1_000));
      return [...reconciled].sort();
    };

    try {
      await waitFor('the initial reconciles', async () => reconciled.size === 5);
      assert.deepEqual(await touch('wa', 'red', ['wa/w1']), ['wa/w1']);

      await widget('wa', 'w4', 'red'); // a Widget created after its ConfigMap
      await waitFor('w4 reconciled', async () => reconciled.has('wa/w4'));
      assert.deepEqual(await touch('wa', 'red', ['wa/w1', 'wa/w4']), ['wa/w1', 'wa/w4']);

      await client.patch(Widgets, { namespace: 'wa', name: 'w1' }, { spec: { color: 'blue' } }); // its reference moves
      await waitFor('w1 reconciled', async () => reconciled.has('wa/w1'));
      assert.deepEqual(await touch('wa', 'red', ['wa/w4']), ['wa/w4']);
      assert.deepEqual(await touch('wa', 'blue', ['wa/w1', 'wa/w2']), ['wa/w1', 'wa/w2']);
      assert.deepEqual(await touch('wb', 'red', ['wb/w3']), ['wb/w3']);
      assert.deepEqual(await touch(undefined, 'teal', ['wa/t1', 'wb/t2']), ['wa/t1', 'wb/t2'], 'every namespace');

      await client.create(Secrets, { metadata: { namespace: 'wa', name: 'bad' } });
      await waitFor('the failing mapper counted', async () =>
        /opkit_controller_mapper_errors_total\{controller="widget",kind="Secret"\} 1\n/.test(
          metrics.registry.metrics(),
        ),
      );
      assert.ok(entries.some((e) => e.level === 'error' && e.fields.err === 'this mapper fails'));
      assert.deepEqual(await touch('wa', 'red', ['wa/w4']), ['wa/w4'], 'the other watches go on');
    } finally {
      stop.abort();
      await running;
    }
  });
});
