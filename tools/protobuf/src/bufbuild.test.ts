/**
 * The bench's library column decodes what the apiserver sends: every core/v1 fixture (apimachinery's own protobuf
 * encoding of random objects with non-ASCII strings) decodes with `@bufbuild/protobuf` over the committed
 * descriptor set, to the same names and the same number of list items as the fixture's JSON.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { bufbuildDecoder } from './bufbuild.ts';
import { DATA } from './main.ts';

interface Named {
  metadata?: { name?: string; namespace?: string };
  items?: Named[];
}

test('every core/v1 fixture decodes with @bufbuild/protobuf to its names and items', () => {
  const fixtures = gunzipSync(readFileSync(join(DATA, 'fixtures.jsonl.gz')))
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { apiVersion: string; kind: string; protobuf: string; json: Named })
    .filter((f) => f.apiVersion === 'v1');
  assert.ok(fixtures.length > 90, `${fixtures.length} core/v1 fixtures`);
  const decoders = new Map<string, ReturnType<typeof bufbuildDecoder>>();
  for (const f of fixtures) {
    const decoder = decoders.get(f.kind) ?? bufbuildDecoder(f.kind);
    decoders.set(f.kind, decoder);
    const got = decoder.decodeToJson(Buffer.from(f.protobuf, 'base64')) as Named;
    const what = `${f.kind} ${JSON.stringify(f.json.metadata?.name)}`;
    // protobuf carries an empty string where the JSON omits it (omitempty): the two shapes differ there
    const names = (o: Named) => [o.metadata?.name ?? '', o.metadata?.namespace ?? ''];
    assert.deepEqual(names(got), names(f.json), what);
    assert.deepEqual((got.items ?? []).map(names), (f.json.items ?? []).map(names), what);
  }
});
