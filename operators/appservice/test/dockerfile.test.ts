/**
 * There is no container engine on the machines this project is built on, so the Dockerfile is checked structurally:
 * pinned base, multi-stage, production dependencies only, non-root user, and every COPY source exists.
 */
import assert from 'node:assert/strict';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('the operator Dockerfile is multi-stage, pinned, production-only and non-root', async () => {
  const text = await readFile(join(ROOT, 'operators/appservice/Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1] ?? '';
  assert.match(arg, /^node:24\.\d+\.\d+-[a-z]+-slim$/, 'the base image is pinned to a Node 24 patch release');
  assert.equal(lines.filter((l) => l.startsWith('FROM ')).length, 2, 'two stages');
  assert.match(text, /npm ci --omit=dev --ignore-scripts/);
  const user = /^USER (\S+)$/m.exec(text)?.[1] ?? '';
  assert.match(user, /^[1-9]\d*:[1-9]\d*$/, 'a numeric non-root user (runAsNonRoot can verify it)');
  assert.ok(
    lines.indexOf(`USER ${user}`) > lines.findLastIndex((l) => l.startsWith('FROM ')),
    'USER is in the final stage',
  );
  for (const line of lines.filter((l) => l.startsWith('COPY ') && !l.includes('--from='))) {
    const parts = line.split(/\s+/).slice(1, -1);
    for (const src of parts) await access(join(ROOT, src)); // throws if a COPY source is missing
  }
  assert.match(text, /ENTRYPOINT \["node", "operators\/appservice\/src\/main\.ts"\]/);
  const ignore = await readFile(join(ROOT, '.dockerignore'), 'utf8');
  for (const p of ['**/node_modules', '**/*.test.ts', '.git']) assert.ok(ignore.includes(p), `.dockerignore has ${p}`);
});
