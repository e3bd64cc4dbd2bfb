/**
 * @module tools/kinds/output
 * Where the generated kinds live (packages/runtime/src/client/kinds/, with its entry `index.ts`), and their schemas
 * (packages/runtime/src/client/schemas/), and how they are written and compared. A file of that folder is generated when its first line is `GENERATED_LINE`.
 *
 * Guarantees: `writeKinds` replaces the generated files and removes the generated files the generator no longer
 * writes, never a hand-written one; `staleKinds` names every file that differs, is missing or is left over.
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GENERATED_LINE } from './emit.ts';
import type { GeneratedFiles } from './generate.ts';

/** The repository root. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
/** The folder of the generated kinds. */
export const KINDS_DIR = join(ROOT, 'packages/runtime/src/client/kinds');
/** The folder of the generated schemas (tools/kinds/schema-files). */
export const SCHEMAS_DIR = join(ROOT, 'packages/runtime/src/client/schemas');
/** The command that regenerates them. */
export const REGENERATE = 'npm run kinds';

/** The generated files now in `dir`: base name → content. */
export async function committedKinds(dir = KINDS_DIR): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of (await readdir(dir)).sort()) {
    if (!name.endsWith('.ts')) continue;
    const text = await readFile(join(dir, name), 'utf8');
    if (text.startsWith(`${GENERATED_LINE}\n`)) out.set(name, text);
  }
  return out;
}

/** Writes `files` into `dir` and removes the generated files of `dir` that `files` does not have. */
export async function writeKinds(files: GeneratedFiles, dir = KINDS_DIR): Promise<void> {
  for (const name of (await committedKinds(dir)).keys()) if (!files.has(name)) await rm(join(dir, name));
  for (const [name, text] of files) await writeFile(join(dir, name), text);
}

/** What differs between `files` and what `dir` holds (empty when current). */
export async function staleKinds(files: GeneratedFiles, dir = KINDS_DIR): Promise<string[]> {
  const committed = await committedKinds(dir);
  const problems: string[] = [];
  for (const [name, text] of files) {
    const now = committed.get(name);
    if (now === undefined) problems.push(`${name} is missing`);
    else if (now !== text) problems.push(`${name} differs`);
  }
  for (const name of committed.keys()) if (!files.has(name)) problems.push(`${name} is no longer generated`);
  return problems;
}

/** What differs between the generated kinds and schemas and what their folders hold (empty when current). */
export async function staleGenerated(kinds: GeneratedFiles, schemas: GeneratedFiles): Promise<string[]> {
  return [...(await staleKinds(kinds)), ...(await staleKinds(schemas, SCHEMAS_DIR)).map((p) => `schemas/${p}`)];
}
