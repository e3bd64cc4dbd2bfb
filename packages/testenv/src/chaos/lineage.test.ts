import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  childShape,
  compareChildren,
  Lineage,
  multipleControllers,
  type ObjectRecord,
  type OwnerReference,
  ownerless,
} from './lineage.ts';

const ref = (o: ObjectRecord, controller = true): OwnerReference => ({
  apiVersion: o.apiVersion ?? 'v1',
  kind: o.kind ?? '?',
  name: o.metadata?.name ?? '?',
  uid: o.metadata?.uid ?? '?',
  controller,
});
const obj = (
  kind: string,
  name: string,
  uid: string,
  owners: OwnerReference[] = [],
  namespace = 'ns',
): ObjectRecord => ({
  apiVersion: kind === 'CronJob' || kind === 'Job' ? 'batch/v1' : 'v1',
  kind,
  metadata: { name, namespace, uid, ownerReferences: owners },
});

const cron = obj('CronJob', 'nightly', 'u-cron');
const job = obj('Job', 'nightly-1', 'u-job', [ref(cron)]);
const pod = obj('Pod', 'nightly-1-x7k2p', 'u-pod', [ref(job)]);

test('one controller: an object with two controller references is named with both', () => {
  const other = obj('CronJob', 'weekly', 'u-weekly');
  const twice = obj('Job', 'shared', 'u-shared', [ref(cron), ref(other)]);
  const notTwice = obj('Job', 'fine', 'u-fine', [ref(cron), ref(other, false)]);
  const found = multipleControllers([twice, notTwice, job]);
  assert.deepEqual(
    found.map((v) => [v.invariant, v.object]),
    [['one-controller', 'Job ns/shared']],
  );
  assert.match(found[0]?.message ?? '', /2 controller references \(CronJob nightly, CronJob weekly\)/);
});

test('descendants at any depth, each with its owner path; the order of observation does not matter', () => {
  const orders = [
    [cron, job, pod],
    [pod, job, cron],
  ];
  for (const order of orders) {
    const lineage = new Lineage();
    for (const o of order) lineage.observe(o);
    assert.deepEqual([...lineage.descendants(['u-cron'])].sort(), [
      ['u-job', 'CronJob>Job'],
      ['u-pod', 'CronJob>Job>Pod'],
    ]);
  }
});

test('no orphans: a pod left by a Job deleted with Orphan propagation is found, though its reference was removed', () => {
  const lineage = new Lineage();
  for (const o of [cron, job, pod]) lineage.observe(o);
  // the garbage collector removed the pod's owner reference (Orphan), then the Job and the CronJob went away
  const strippedPod = obj('Pod', 'nightly-1-x7k2p', 'u-pod');
  lineage.observe(strippedPod);
  const found = ownerless(lineage, [strippedPod, obj('Pod', 'unrelated', 'u-other')]);
  assert.deepEqual(
    found.map((v) => [v.invariant, v.object]),
    [['no-orphans', 'Pod ns/nightly-1-x7k2p']],
  );
  assert.match(found[0]?.message ?? '', /outlived its owner Job ns\/nightly-1: it has no owner reference left/);
});

test('no orphans: a dangling reference is named; an owner still live keeps its children', () => {
  const lineage = new Lineage();
  for (const o of [cron, job, pod]) lineage.observe(o);
  const found = ownerless(lineage, [pod, cron]);
  assert.deepEqual(
    found.map((v) => v.object),
    ['Pod ns/nightly-1-x7k2p'],
  );
  assert.match(found[0]?.message ?? '', /outlived its owner Job ns\/nightly-1, which is gone/);
  assert.deepEqual(ownerless(lineage, [cron, job, pod]), [], 'every owner live');
  assert.deepEqual(ownerless(lineage, []), [], 'nothing left, nothing to report');
});

test('the same children: a duplicate and a missing child are told apart; names and uids never count', () => {
  const app = obj('AppService', 'web', 'u-app');
  const pods = (n: number, prefix: string) =>
    Array.from({ length: n }, (_, i) => obj('Pod', `web-${prefix}${i}`, `u-${prefix}${i}`, [ref(app)]));
  const shapeOf = (live: ObjectRecord[]) => {
    const lineage = new Lineage();
    for (const o of [app, ...live]) lineage.observe(o);
    return childShape(lineage, [app], live);
  };
  const baseline = shapeOf(pods(3, 'a'));
  assert.deepEqual([...(baseline.get('AppService ns/web') ?? [])], [['AppService>Pod', 3]]);
  assert.deepEqual(compareChildren(baseline, shapeOf(pods(3, 'b'))), [], 'other names, same shape');
  const more = compareChildren(baseline, shapeOf(pods(4, 'c')));
  assert.deepEqual(
    more.map((v) => v.message),
    ['AppService ns/web: 4 AppService>Pod (the fault-free run made 3): a duplicate child'],
  );
  const fewer = compareChildren(baseline, shapeOf(pods(2, 'd')));
  assert.match(fewer[0]?.message ?? '', /2 AppService>Pod \(the fault-free run made 3\): a child missing/);
});

test('the same children, by a role the caller names (a label), where one kind plays several parts', () => {
  const db = obj('Database', 'main', 'u-db');
  const secret = (name: string, role: string) => {
    const o = obj('Secret', name, `u-${name}`, [ref(db)]);
    return { ...o, metadata: { ...o.metadata, labels: { role } } };
  };
  const roleOf = (o: ObjectRecord, path: string) =>
    `${path}[${(o.metadata as { labels?: Record<string, string> }).labels?.role ?? ''}]`;
  const shapeOf = (live: ObjectRecord[]) => {
    const lineage = new Lineage();
    for (const o of [db, ...live]) lineage.observe(o);
    return childShape(lineage, [db], live, roleOf);
  };
  const baseline = shapeOf([secret('main-auth', 'auth'), secret('main-tls', 'tls')]);
  const trial = shapeOf([secret('main-auth', 'auth'), secret('main-auth-2', 'auth')]);
  assert.deepEqual(
    compareChildren(baseline, trial).map((v) => v.message),
    [
      'Database ns/main: 2 Database>Secret[auth] (the fault-free run made 1): a duplicate child',
      'Database ns/main: 0 Database>Secret[tls] (the fault-free run made 1): a child missing',
    ],
  );
});

test('ownerless: an object whose every owner is gone, its reference removed (Orphan) or left; never one with a live owner', () => {
  const lineage = new Lineage();
  for (const o of [cron, job, pod]) lineage.observe(o);
  const orphanedPod = obj('Pod', 'nightly-1-x7k2p', 'u-pod'); // the Job deleted with Orphan: its reference removed
  const [v, ...rest] = ownerless(lineage, [cron, orphanedPod]);
  assert.equal(rest.length, 0);
  assert.equal(v?.invariant, 'no-orphans');
  assert.match(v?.message ?? '', /outlived its owner Job ns\/nightly-1: it has no owner reference left/);
  assert.match(
    ownerless(lineage, [cron, pod])[0]?.message ?? '',
    /which is gone, and the garbage collector has not removed it/,
  );
  assert.deepEqual(ownerless(lineage, [cron, job, pod]), [], 'every owner live');
  const adopter = obj('Job', 'nightly-2', 'u-job2');
  const adopted = obj('Pod', 'nightly-1-x7k2p', 'u-pod', [ref(adopter)]);
  lineage.observe(adopted);
  assert.deepEqual(ownerless(lineage, [adopter, adopted]), [], 'adopted by a live owner');
  assert.deepEqual(ownerless(new Lineage(), [orphanedPod]), [], 'never owned, as far as the record saw');
});
