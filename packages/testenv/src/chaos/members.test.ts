import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareMembers, memberLines } from './members.ts';
import type { Manifest } from './objects.ts';

const copy = (ns: string, uid: string, replicas: string, extra: Partial<Manifest['metadata']> = {}): Manifest => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'tenant-acme',
    namespace: ns,
    uid: `${uid}-0000-4000-8000-000000000000`,
    resourceVersion: uid,
    labels: { 'opkit.dev/fleet-copy-of': `${uid}-1111-4111-8111-111111111111` },
    annotations: { 'opkit.dev/fleet-copy-source': `fleet.example.org/v1/Tenant ${ns}/acme` },
    ...extra,
  } as Manifest['metadata'],
  data: { replicas, z: '1', a: '2' },
});

test('memberLines: the same object in two runs is the same line, whatever its uids, namespace and key order', () => {
  const a = memberLines([copy('chaos-x-1', 'aaaaaaaa', '3')], 'chaos-x-1');
  const b = memberLines([copy('chaos-x-7', 'bbbbbbbb', '3')], 'chaos-x-7');
  assert.deepEqual(a, b);
  assert.match(a[0] ?? '', /^ConfigMap tenant-acme \{/);
  assert.match(a[0] ?? '', /<namespace>\/acme/);
  assert.doesNotMatch(a[0] ?? '', /aaaaaaaa|resourceVersion/);
  assert.notDeepEqual(memberLines([copy('n', 'aaaaaaaa', '1')], 'n'), memberLines([copy('n', 'aaaaaaaa', '3')], 'n'));
  const namespace = (name: string): Manifest => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  assert.deepEqual(
    memberLines([namespace('chaos-x-1')], 'chaos-x-1'),
    memberLines([namespace('chaos-x-2')], 'chaos-x-2'),
  );
  const finalized = memberLines([copy('n', 'aaaaaaaa', '3', { finalizers: ['x/y'] } as never)], 'n');
  assert.notDeepEqual(finalized, memberLines([copy('n', 'aaaaaaaa', '3')], 'n'), 'a finalizer left behind shows');
});

test('compareMembers: a missing, a leaked and a different object, each named with its member', () => {
  const line = (replicas: string) => memberLines([copy('chaos-x-1', 'aaaaaaaa', replicas)], 'chaos-x-1');
  const base = { 'member-1': line('3'), 'member-2': line('3') };
  assert.deepEqual(compareMembers(base, { 'member-1': line('3'), 'member-2': line('3') }), []);
  const found = compareMembers(base, { 'member-1': [], 'member-2': line('1') });
  assert.deepEqual(
    found.map((v) => [v.invariant, v.object]),
    [
      ['same-member-objects', 'member-1: ConfigMap tenant-acme'],
      ['same-member-objects', 'member-2: ConfigMap tenant-acme'],
    ],
  );
  assert.match(found[0]?.message ?? '', /in member member-1, ConfigMap tenant-acme is missing/);
  assert.match(
    found[1]?.message ?? '',
    /in member member-2, ConfigMap tenant-acme differs .*"replicas":"1".*expected .*"replicas":"3"/,
  );
  const twice = compareMembers({ 'member-1': line('3') }, { 'member-1': [...line('3'), ...line('3')] });
  assert.equal(twice.length, 1, 'a duplicate of an object alike shows');
  assert.match(twice[0]?.message ?? '', /once more than in the fault-free run \(a duplicate\)/);
  const leaked = compareMembers({ 'member-1': [] }, { 'member-1': line('3') });
  assert.match(leaked[0]?.message ?? '', /is there, but the fault-free run had no such object/);
});
