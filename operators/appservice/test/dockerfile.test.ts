/**
 * There is no container engine on the machines this project is built on, so the Dockerfile is checked structurally:
 * pinned base, multi-stage, the operator bundled in the build stage and only it with the production dependencies in
 * the image, non-root user, and every COPY source exists. What the build stage makes is run for real by the
 * benchmarks (bench/src/peers.ts) and by the scaffold's test (packages/cli/test/scaffold.test.ts).
 */
import assert from 'node:assert/strict';
import { access, readFile } from 'node:fs/promises';
import { join, matchesGlob } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

test('the operator Dockerfile bundles the operator, and ships the bundle with production dependencies, non-root', async () => {
  const text = await readFile(join(ROOT, 'operators/appservice/Dockerfile'), 'utf8');
  const lines = text.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
  const arg = /^ARG NODE_IMAGE=(\S+)$/m.exec(text)?.[1] ?? '';
  assert.match(arg, /^node:24\.\d+\.\d+-[a-z]+-slim$/, 'the base image is pinned to a Node 24 patch release');
  const stages = lines.filter((l) => l.startsWith('FROM '));
  const from = `FROM \${NODE_IMAGE}`;
  assert.deepEqual(stages, [`${from} AS manifests`, 'FROM manifests AS build', 'FROM manifests AS deps', from]);
  const final = lines.findLastIndex((l) => l.startsWith('FROM '));
  const build = lines.indexOf('FROM manifests AS build');
  const deps = lines.indexOf('FROM manifests AS deps');
  assert.ok(
    lines.some((l, i) => i > build && i < deps && l.includes('main.ts build --js --dir operators/appservice')),
    'the build stage bundles the operator with `opkit build --js`',
  );
  assert.ok(
    lines.some((l, i) => i > deps && i < final && /npm ci --omit=dev --ignore-scripts/.test(l)),
    'the deps stage installs the production dependencies only',
  );
  const user = /^USER (\S+)$/m.exec(text)?.[1] ?? '';
  assert.match(user, /^[1-9]\d*:[1-9]\d*$/, 'a numeric non-root user (runAsNonRoot can verify it)');
  assert.ok(lines.indexOf(`USER ${user}`) > final, 'USER is in the final stage');
  const ignored = dockerignored(await readFile(join(ROOT, '.dockerignore'), 'utf8'));
  for (const line of lines.filter((l) => l.startsWith('COPY ') && !l.includes('--from='))) {
    const parts = line.split(/\s+/).slice(1, -1);
    for (const src of parts) {
      await access(join(ROOT, src)); // throws if a COPY source is missing
      assert.ok(!ignored(src), `${src} is in the build context (.dockerignore does not leave it out)`);
    }
  }
  // the image carries the bundle and the production node_modules, no sources
  const copied = lines.slice(final).filter((l) => l.startsWith('COPY '));
  assert.ok(copied.includes('COPY --from=deps /app/node_modules ./node_modules'));
  assert.ok(
    copied.includes('COPY --from=build /app/operators/appservice/dist/operator operators/appservice/dist/operator'),
  );
  assert.ok(!copied.some((l) => l.includes('/src')), `no sources in the image: ${copied.join('; ')}`);
  assert.match(text, /ENTRYPOINT \["node", "operators\/appservice\/dist\/operator\/main\.mjs"\]/);
  // Every workspace's package.json is in the stage both installs start from, or npm ci refuses the lock file.
  const root = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] };
  for (const w of root.workspaces) {
    const at = lines.indexOf(`COPY ${w}/package.json ${w}/`);
    assert.ok(at >= 0 && at < build, `the manifests stage copies ${w}/package.json`);
  }
  // The compile cache is warmed in the final stage, from the bundle, and readable by the non-root user.
  const cache = /NODE_COMPILE_CACHE=(\S+)/.exec(text)?.[1] ?? '';
  assert.ok(cache.startsWith('/app/'), 'NODE_COMPILE_CACHE is set in the image');
  const warm = lines.findIndex((l) => l.startsWith('RUN node operators/appservice/dist/operator/main.mjs --help'));
  assert.ok(warm > final && warm < lines.indexOf(`USER ${user}`));
  assert.ok(lines[warm]?.includes(`chmod -R a+rX ${cache}`), 'the cache is readable by the runtime user');
  const ignore = await readFile(join(ROOT, '.dockerignore'), 'utf8');
  for (const p of ['**/node_modules', '**/*.test.ts', '.git']) assert.ok(ignore.includes(p), `.dockerignore has ${p}`);
  assert.ok(ignore.includes('dist/operator'), '.dockerignore keeps a local bundle out of the build context');
});

/**
 * Whether .dockerignore's `text` leaves `path` out of the build context, as Docker reads it: the last pattern that
 * matches the path or one of its parent folders decides (`!` brings a path back), `*` within a name, `**` any depth.
 */
function dockerignored(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => ({ keep: l.startsWith('!'), glob: l.replace(/^!/, '').replace(/^\/+|\/+$/g, '') }));
  return (path) => {
    const parts = path.replace(/\/+$/, '').split('/');
    const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
    let out = false;
    for (const r of rules) if (prefixes.some((p) => matchesGlob(p, r.glob))) out = !r.keep;
    return out;
  };
}
