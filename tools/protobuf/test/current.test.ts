/**
 * The committed protobuf decoders (packages/runtime/src/client/protobuf/messages/ and kinds.ts) are what the emitter
 * writes from tools/protobuf/data/descriptor.json: a change of the emitter or of the descriptor fails here until
 * `npm run protobuf` is run and its output committed.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { emit } from '../src/emit.ts';
import { OUT, readDescriptor } from '../src/main.ts';

test('the committed protobuf decoders are generated from the committed descriptor', () => {
  const files = emit(readDescriptor());
  const stale: string[] = [];
  for (const [path, text] of files) {
    let committed: string | undefined;
    try {
      committed = readFileSync(join(OUT, path), 'utf8');
    } catch {
      committed = undefined;
    }
    if (committed !== text) stale.push(path);
  }
  for (const name of readdirSync(join(OUT, 'messages')))
    if (!files.has(`messages/${name}`)) stale.push(`messages/${name} (not generated any more)`);
  assert.deepEqual(stale, [], 'the protobuf decoders are not current: run `npm run protobuf` and commit the result');
});
