import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ConfigMap } from '../client/builtins.ts';
import { type KubeObject, keyOf } from '../client/resource.ts';
import { indexers, Store } from './store.ts';

const obj = (name: string, rv: string, extra: Partial<KubeObject['metadata']> = {}): KubeObject => ({
  metadata: { namespace: 'ns', name, uid: `uid-${name}`, resourceVersion: rv, ...extra },
});

function recorded(store: Store<KubeObject>): string[] {
  const events: string[] = [];
  store.listener = {
    add: (o) => events.push(`add ${o.metadata.name}`),
    update: (_old, o) => events.push(`update ${o.metadata.name}`),
    delete: (o) => events.push(`delete ${o.metadata.name}`),
  };
  return events;
}

test('replace() reports only real changes: adds, updates by resourceVersion, deletes; never a duplicate add', () => {
  const store = new Store<KubeObject>();
  store.replace([obj('a', '1'), obj('b', '1'), obj('c', '1')]);
  const events = recorded(store);
  store.replace([obj('a', '1'), obj('b', '2'), obj('d', '1')]);
  assert.deepEqual(events, ['delete c', 'update b', 'add d']);
  events.length = 0;
  // same name, new UID: the object was deleted and re-created during the gap
  store.replace([obj('a', '5', { uid: 'other' }), obj('b', '2'), obj('d', '1')]);
  assert.deepEqual(events, ['delete a', 'add a']);
  assert.equal(store.size, 3);
});

test('indexes follow every change', () => {
  const store = new Store<KubeObject>();
  store.addIndexer('owner', indexers.owner);
  store.addIndexer('app', indexers.label('app'));
  const owned = (name: string, owner: string, rv: string, app: string) =>
    obj(name, rv, {
      ownerReferences: [{ apiVersion: 'v1', kind: 'X', name: owner, uid: owner, controller: true }],
      labels: { app },
    });
  store.upsert(owned('p1', 'o1', '1', 'web'));
  store.upsert(owned('p2', 'o1', '1', 'db'));
  assert.deepEqual(
    store
      .byIndex('owner', 'o1')
      .map((o) => o.metadata.name)
      .sort(),
    ['p1', 'p2'],
  );
  store.upsert(owned('p2', 'o2', '2', 'web'));
  assert.deepEqual(
    store.byIndex('owner', 'o1').map((o) => o.metadata.name),
    ['p1'],
  );
  assert.deepEqual(
    store
      .byIndex('app', 'web')
      .map((o) => o.metadata.name)
      .sort(),
    ['p1', 'p2'],
  );
  store.remove(obj('p1', '3'));
  assert.deepEqual(
    store.byIndex('app', 'web').map((o) => o.metadata.name),
    ['p2'],
  );
  assert.deepEqual(store.byIndex('owner', 'nobody'), []);
  assert.throws(() => store.byIndex('missing', 'x'), /no index named "missing"/);
  // an index added later covers what is already stored
  store.addIndexer('namespace', indexers.namespace);
  assert.equal(store.byIndex('namespace', 'ns').length, 1);
});

test('with freeze, stored objects cannot be mutated', () => {
  const store = new Store<KubeObject>({ freeze: true });
  store.upsert(obj('a', '1', { labels: { x: '1' } }));
  const a = store.get('ns/a') as KubeObject;
  assert.throws(() => {
    (a.metadata.labels as Record<string, string>).x = '2';
  }, TypeError);
});

test('replace() scoped to a namespace touches only that namespace: reflectors of several namespaces share a store', () => {
  const store = new Store<ConfigMap>();
  store.addIndexer('namespace', indexers.namespace);
  const cm = (namespace: string, name: string, rv: string): ConfigMap => ({
    metadata: { namespace, name, resourceVersion: rv, uid: `${namespace}-${name}` },
  });
  const deleted: string[] = [];
  store.replace([cm('a', 'x', '1'), cm('a', 'y', '1')], 'a');
  store.replace([cm('b', 'x', '1')], 'b');
  store.listener = { add() {}, update() {}, delete: (o) => deleted.push(keyOf(o)) };
  // a relist of namespace a in which y is gone: b's objects stay
  store.replace([cm('a', 'x', '1')], 'a');
  assert.deepEqual([...store.keys()].sort(), ['a/x', 'b/x']);
  assert.deepEqual(deleted, ['a/y']);
  // without the namespace index the scope still holds
  const plain = new Store<ConfigMap>();
  plain.replace([cm('a', 'x', '1'), cm('b', 'x', '1')]);
  plain.replace([], 'a');
  assert.deepEqual([...plain.keys()], ['b/x']);
});
