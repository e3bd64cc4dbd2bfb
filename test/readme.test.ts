/**
 * README's code is a file the tests compile and run: every fenced block of README.md that follows an
 * `<!-- example: PATH -->` marker must be that file, byte for byte (examples/website.test.ts runs it on a real control
 * plane, and the type check covers `examples/`). The example imports only what a user can: the public entries of
 * `@opkit/runtime` (its package.json `exports`), TypeBox and Node's modules, never a package's sources.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Each `<!-- example: PATH -->` marker of `markdown` with the fenced block right below it (undefined when none). */
function exampleBlocks(markdown: string): { path: string; code: string | undefined }[] {
  return [...markdown.matchAll(/^<!-- example: (\S+) -->\n(?:```\w*\n([\s\S]*?)^```$)?/gm)].map((m) => ({
    path: m[1] as string,
    code: m[2],
  }));
}

test('exampleBlocks: the block below each marker, undefined when the marker has none', () => {
  const md = '<!-- example: a.ts -->\n```ts\nconst a = 1;\n\nexport { a };\n```\n\n<!-- example: b.ts -->\ntext\n';
  assert.deepEqual(exampleBlocks(md), [
    { path: 'a.ts', code: 'const a = 1;\n\nexport { a };\n' },
    { path: 'b.ts', code: undefined },
  ]);
});

test("README's example is the file the tests compile and run, and comes before the set-up commands", async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  const blocks = exampleBlocks(readme);
  assert.deepEqual(
    blocks.map((b) => b.path),
    ['examples/website.ts'],
    'README shows the complete controller of examples/website.ts',
  );
  for (const { path, code } of blocks) {
    assert.ok(code !== undefined, `README: no fenced block below <!-- example: ${path} -->`);
    const file = await readFile(join(ROOT, path), 'utf8');
    assert.equal(code, file, `README's block differs from ${path}: copy the file into README.md below its marker`);
  }
  assert.ok(
    readme.indexOf('<!-- example: ') < readme.indexOf('## Set-up (this repository)'),
    'the example comes before the set-up commands',
  );
});

test('the example imports only what a user of the published packages can', async () => {
  const manifest = JSON.parse(await readFile(join(ROOT, 'packages/runtime/package.json'), 'utf8')) as {
    exports: Record<string, unknown>;
  };
  const runtimeEntries = Object.keys(manifest.exports).map((k) =>
    k === '.' ? '@opkit/runtime' : `@opkit/runtime/${k.slice(2)}`,
  );
  const text = await readFile(join(ROOT, 'examples/website.ts'), 'utf8');
  const specifiers = [...text.matchAll(/^import [^'"]*from '([^']+)';$/gm)].map((m) => m[1] as string);
  assert.ok(specifiers.length > 0);
  const wrong = specifiers.filter(
    (s) => !runtimeEntries.includes(s) && s !== '@sinclair/typebox' && !s.startsWith('node:'),
  );
  assert.deepEqual(wrong, [], 'imports other than @opkit/runtime entries, @sinclair/typebox and node:');
});
