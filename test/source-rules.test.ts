/**
 * The source rules of ../shared/STYLE.md that a reader cannot see at a glance, checked over every package's `src/`
 * (tests and fixtures excluded): every error thrown is the package's own class with a code no other error of that
 * package has, documented and listed in docs/errors.md; no file over 400 lines (the CRD schema compiler excepted: one
 * table of JSON Schema keywords). Functions over 60 lines are biome's `noExcessiveLinesPerFunction` (biome.json).
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collectErrorCodes, renderErrorTable, sourceFiles } from '../tools/docs/errors.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAX_LINES = 400;
const LONG_FILES = new Set(['packages/runtime/src/crd/schema.ts']);
/** The base classes: the only classes that extend `Error` directly. */
const BASES = new Set(['OpkitError', 'TestenvError', 'CliError']);

async function packageSources(): Promise<string[]> {
  const pkgs = (await readdir(join(ROOT, 'packages'), { withFileTypes: true })).filter((e) => e.isDirectory());
  const files = await Promise.all(pkgs.map((p) => sourceFiles(ROOT, `packages/${p.name}`)));
  return files.flat();
}

/** Lines of `text` (1-based) that construct a plain error, or an `OpkitError` without a subclass. */
function plainErrors(text: string): number[] {
  const out: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (/\bnew (?:Error|TypeError|RangeError|SyntaxError|EvalError|URIError|ReferenceError|OpkitError)\(/.test(line))
      out.push(i + 1);
  });
  return out;
}

test('no source constructs a plain Error, TypeError or RangeError: each error is its package’s own class', async () => {
  const found: string[] = [];
  for (const file of await packageSources()) {
    const text = await readFile(join(ROOT, file), 'utf8');
    for (const line of plainErrors(text)) found.push(`${file}:${line}`);
    for (const m of text.matchAll(/class (\w+) extends Error\b/g))
      if (!BASES.has(m[1] ?? '')) found.push(`${file}: class ${m[1]} extends Error (extend the package's base class)`);
  }
  assert.deepEqual(found, [], `plain errors in source:\n${found.join('\n')}`);
});

test(`no source file has more than ${MAX_LINES} lines`, async () => {
  const long: string[] = [];
  for (const file of await packageSources()) {
    if (LONG_FILES.has(file)) continue;
    const lines = (await readFile(join(ROOT, file), 'utf8')).split('\n').length - 1;
    if (lines > MAX_LINES) long.push(`${file}: ${lines} lines`);
  }
  assert.deepEqual(long, [], `split these files along their seams:\n${long.join('\n')}`);
});

test('every error code is unique in its package, carried by a class, and documented', async () => {
  const entries = await collectErrorCodes(ROOT);
  assert.ok(entries.length > 50, `only ${entries.length} error codes found: is the parser broken?`);
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const e of entries) {
    const key = `${e.pkg} ${e.code}`;
    const where = `${e.union} (${e.file})`;
    const other = seen.get(key);
    if (other !== undefined) problems.push(`${e.pkgName}: code ${e.code} is in ${other} and ${where}`);
    seen.set(key, where);
    if (e.cls === '') problems.push(`${where}: no error class has code: ${e.union}`);
    if (e.doc === '') problems.push(`${where}: code ${e.code} has no doc comment`);
  }
  for (const file of await packageSources()) {
    const text = await readFile(join(ROOT, file), 'utf8');
    for (const m of text.matchAll(/class (\w+) extends OpkitError<([^>]*)>/g))
      if (!/^\w+ErrorCode$/.test(m[2] ?? ''))
        problems.push(`${file}: ${m[1]} extends OpkitError<${m[2]}>: name its codes in a documented …ErrorCode union`);
  }
  assert.deepEqual(problems, [], problems.join('\n'));
});

test('docs/errors.md is current (npm run docs writes it)', async () => {
  const expected = renderErrorTable(await collectErrorCodes(ROOT));
  const actual = await readFile(join(ROOT, 'docs/errors.md'), 'utf8').catch(() => '');
  assert.equal(actual, expected, 'docs/errors.md is out of date: run npm run docs');
});
