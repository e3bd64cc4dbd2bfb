/**
 * The dependency direction of ../shared/STYLE.md, checked: which workspace may import which (tests may also use
 * @opkit/testenv), no package imports another's internals, and relative imports stay inside their package.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** What each workspace may import of ours. */
const ALLOWED: Record<string, readonly string[]> = {
  'packages/testenv': [],
  'packages/runtime': [],
  'packages/cli': ['@opkit/runtime', '@opkit/testenv'],
  'packages/create-opkit': ['@opkit/cli'],
  'operators/appservice': ['@opkit/runtime', '@opkit/testenv'],
  bench: ['@opkit/runtime', '@opkit/testenv', '@opkit/appservice'],
};

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The entries a workspace package declares public: `@opkit/cli` and `@opkit/cli/node-version` for its `exports` "." and "./node-version". */
async function publicEntries(pkg: string): Promise<string[]> {
  for (const workspace of Object.keys(ALLOWED)) {
    const manifest = JSON.parse(await readFile(join(ROOT, workspace, 'package.json'), 'utf8')) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    if (manifest.name === pkg)
      return Object.keys(manifest.exports ?? { '.': '' }).map((key) => (key === '.' ? pkg : `${pkg}/${key.slice(2)}`));
  }
  return [pkg];
}

test('workspaces import only what the layering allows', async () => {
  const violations: string[] = [];
  for (const [workspace, allowed] of Object.entries(ALLOWED)) {
    const base = join(ROOT, workspace);
    for await (const file of tsFiles(base)) {
      const text = await readFile(file, 'utf8');
      for (const m of text.matchAll(IMPORT)) {
        const spec = (m[1] ?? m[2]) as string;
        const where = relative(ROOT, file);
        if (spec.startsWith('@opkit/')) {
          const pkg = spec.split('/').slice(0, 2).join('/');
          const isTest = where.includes('/test/') || where.endsWith('.test.ts');
          const ok = allowed.includes(pkg) || (isTest && pkg === '@opkit/testenv' && workspace !== 'packages/testenv');
          if (!ok) violations.push(`${where} imports ${spec}, not allowed for ${workspace}`);
          const entries = await publicEntries(pkg);
          if (!entries.includes(spec))
            violations.push(
              `${where} imports ${spec}: use one of the package's public entries (${entries.join(', ')})`,
            );
        } else if (spec.startsWith('.')) {
          const target = resolve(dirname(file), spec);
          if (!target.startsWith(`${base}/`)) violations.push(`${where} reaches outside ${workspace} with ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});
