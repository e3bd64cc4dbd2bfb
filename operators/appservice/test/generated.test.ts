import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const GENERATE = fileURLToPath(new URL('../scripts/generate.ts', import.meta.url));

test('config/ and dist/install.yaml are what the code generates (npm run generate -- --check)', () => {
  const r = spawnSync(process.execPath, [GENERATE, '--check'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
});
