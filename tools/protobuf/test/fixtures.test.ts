/**
 * The decoders' differential test: random objects of every built-in kind (tools/protobuf/go: apimachinery's fuzzer
 * with valid values for Time, Quantity, IntOrString, …; non-ASCII strings, empty and absent fields), each encoded by
 * apimachinery's own protobuf and JSON serializers. Decoding the protobuf must give exactly `JSON.parse` of the JSON.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import {
  dropManagedFields,
  keepFields,
  maskOf,
  thenDropManagedFields,
} from '../../../packages/runtime/src/cache/transform.ts';
import { decodeEnvelope, load } from '../../../packages/runtime/src/client/protobuf/codec.ts';
import type { KubeObject } from '../../../packages/runtime/src/client/resource.ts';
import { DATA } from '../src/main.ts';

interface Fixture {
  apiVersion: string;
  kind: string;
  protobuf: string;
  json: unknown;
}

const fixtures = gunzipSync(readFileSync(join(DATA, 'fixtures.jsonl.gz')))
  .toString('utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Fixture);

test('every fixture decodes to its JSON form', async () => {
  const kinds = new Set(fixtures.map((f) => `${f.apiVersion} ${f.kind}`));
  assert.ok(kinds.size > 250, `fixtures cover ${kinds.size} kinds`);
  const failures: string[] = [];
  for (const f of fixtures) {
    await load(f.apiVersion, f.kind);
    try {
      assert.deepStrictEqual(decodeEnvelope(Buffer.from(f.protobuf, 'base64')), f.json);
    } catch (err) {
      failures.push(`${f.apiVersion} ${f.kind}: ${(err as Error).message.slice(0, 1500)}`);
    }
  }
  assert.deepEqual(failures.slice(0, 5), []);
});

test('decoding with a transform’s mask, then the transform, gives the transform of the whole object', async () => {
  const transforms = [
    dropManagedFields,
    thenDropManagedFields(keepFields<KubeObject>('status.phase', 'status.conditions')),
    thenDropManagedFields(keepFields<KubeObject>('spec.containers.image', 'spec.template.spec', 'data', 'rules')),
    keepFields<KubeObject>('metadata', 'spec.replicas', 'subsets.addresses.ip'),
  ];
  const failures: string[] = [];
  for (const f of fixtures) {
    await load(f.apiVersion, f.kind);
    const body = Buffer.from(f.protobuf, 'base64');
    for (const [i, t] of transforms.entries()) {
      const mask = maskOf(t);
      assert.ok(mask, `transform ${i} has a mask`);
      const masked = t(decodeEnvelope(body, mask) as unknown as KubeObject);
      const whole = t(decodeEnvelope(body) as unknown as KubeObject);
      try {
        assert.deepStrictEqual(masked, whole);
      } catch (err) {
        failures.push(`${f.apiVersion} ${f.kind} (transform ${i}): ${(err as Error).message.slice(0, 800)}`);
      }
    }
  }
  assert.deepEqual(failures.slice(0, 5), []);
});
