/**
 * The examples of docs/runtime.md's "Quantities" and "Embedding built-in types" sections are run: each block is
 * written to a temporary file with the package's public specifiers pointed at their sources (and the others resolved
 * from here), and imported, so each `assert` in it holds.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SRC = fileURLToPath(new URL('..', import.meta.url));
const RUNTIME_MD = fileURLToPath(new URL('../../../../docs/runtime.md', import.meta.url));

/** The first ```ts block of the section headed `heading`. */
function sectionBlock(markdown: string, heading: string): string {
  const start = markdown.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `docs/runtime.md has no section "## ${heading}"`);
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  const m = /^```ts\n([\s\S]*?)^```$/m.exec(section);
  assert.ok(m?.[1], `the section "${heading}" has no ts block`);
  return m[1];
}

const SOURCES: Record<string, string> = {
  '@opkit/runtime': join(SRC, 'index.ts'),
  '@opkit/runtime/crd': join(SRC, 'crd/index.ts'),
  '@opkit/runtime/quantity': join(SRC, 'quantity/index.ts'),
  '@opkit/runtime/schemas/batch': join(SRC, 'client/schemas/batch.ts'),
  '@opkit/runtime/schemas/core': join(SRC, 'client/schemas/core.ts'),
};

/** Runs the first ts block of the section headed `heading`: each `assert` in it must hold. */
async function runSection(heading: string): Promise<void> {
  const code = sectionBlock(await readFile(RUNTIME_MD, 'utf8'), heading);
  const sources = SOURCES;
  // The temporary file resolves nothing itself: each specifier becomes the URL it has from here.
  const runnable = code.replace(/from '([^']+)'/g, (_whole, spec: string) => {
    const path = sources[spec];
    assert.ok(
      path !== undefined || !spec.startsWith('@opkit/'),
      `the example imports ${spec}, which this test maps not`,
    );
    return `from '${path === undefined ? import.meta.resolve(spec) : pathToFileURL(path).href}'`;
  });
  const dir = await mkdtemp(join(tmpdir(), 'opkit-quantity-docs-'));
  try {
    const file = join(dir, 'example.ts');
    await writeFile(file, runnable);
    await import(pathToFileURL(file).href);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('docs/runtime.md: the Quantities example runs and its assertions hold', async () => {
  await runSection('Quantities (`@opkit/runtime/quantity`)');
});

test('docs/runtime.md: the example of embedding built-in types runs and its assertions hold', async () => {
  await runSection('Embedding built-in types (`@opkit/runtime/schemas/*`)');
});
