import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const OPKIT = fileURLToPath(new URL('./main.ts', import.meta.resolve('@opkit/cli')));
const DIR = fileURLToPath(new URL('..', import.meta.url));

test('config/ and dist/install.yaml are what the code generates (opkit generate --check)', () => {
  const r = spawnSync(process.execPath, [OPKIT, 'generate', '--check', '--dir', DIR], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
