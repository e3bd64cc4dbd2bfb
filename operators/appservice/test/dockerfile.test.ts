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
  // The workspace's runtime ships unbuilt in this image: its sources are reached through the workspace condition.
  const finalEnv = lines.filter(
    (l, i) => l.startsWith('ENV ') && i > lines.findLastIndex((f) => f.startsWith('FROM ')),
  );
  assert.ok(
    finalEnv.some((l) => l.includes('NODE_OPTIONS=--conditions=@opkit/source')),
    'the final stage sets the condition',
  );
  // Every workspace's package.json is in the deps stage, or npm ci refuses the lock file.
  const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
  for (const w of root.workspaces)
    assert.ok(text.includes(`COPY ${w}/package.json ${w}/`), `the deps stage copies ${w}/package.json`);
  // The compile cache is warmed in the final stage, from the entry point, and readable by the non-root user.
  const cache = /NODE_COMPILE_CACHE=(\S+)/.exec(text)?.[1] ?? '';
  assert.ok(cache.startsWith('/app/'), 'NODE_COMPILE_CACHE is set in the image');
  const warm = lines.findIndex((l) => l.startsWith('RUN node operators/appservice/src/main.ts --help'));
  assert.ok(warm > lines.findLastIndex((l) => l.startsWith('FROM ')) && warm < lines.indexOf(`USER ${user}`));
  assert.ok(lines[warm]?.includes(`chmod -R a+rX ${cache}`), 'the cache is readable by the runtime user');
  assert.ok(
    lines[warm]?.includes("'./packages/runtime/src/client/protobuf/messages/'"),
    'the warm-up loads the protobuf decoders, which the client loads lazily',
  );
  const ignore = await readFile(join(ROOT, '.dockerignore'), 'utf8');
  for (const p of ['**/node_modules', '**/*.test.ts', '.git']) assert.ok(ignore.includes(p), `.dockerignore has ${p}`);
});
