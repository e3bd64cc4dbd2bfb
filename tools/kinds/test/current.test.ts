/**
 * The committed built-in kinds (packages/runtime/src/client/kinds/) and their schemas (…/schemas/) are what the
 * generator writes from the OpenAPI v3 documents of the pinned kube-apiserver, read from a running one: a Kubernetes
 * upgrade, or a change of the generator, fails here until `npm run kinds` is run and its output committed.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KUBERNETES_VERSION } from '@opkit/testenv';
import { generateAll } from '../src/generate.ts';
import { fromTestenv } from '../src/main.ts';
import { REGENERATE, staleGenerated } from '../src/output.ts';

test('the committed kinds and their schemas are generated from the pinned apiserver’s OpenAPI', async () => {
  const { docs, version } = await fromTestenv();
  assert.equal(version, KUBERNETES_VERSION, 'the apiserver testenv runs is the pinned version');
  const { kinds, schemas } = generateAll(docs, version);
  const stale = await staleGenerated(kinds, schemas.files);
  assert.deepEqual(stale, [], `the generated kinds are not current: run \`${REGENERATE}\` and commit the result`);
});
