/**
 * The API reference (tools/docs/reference.ts, `npm run docs`) checked: every public export of every published package
 * has a doc comment (and so do the public members of its classes, interfaces and object types), every fenced ```ts
 * block of an `@example` or of a source file's `@module` comment type-checks as a user's file that imports the packages by name, and docs/api/ is exactly
 * what `npm run docs` writes now, so the reference cannot drift from the sources.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { before, test } from 'node:test';
import {
  convert,
  entryPoints,
  examples,
  moduleExamples,
  OUT_DIR,
  openingComment,
  type Reference,
  ROOT,
  render,
  tsBlocks,
  undocumented,
} from '../tools/docs/reference.ts';

/**
 * Files another change is editing: the undocumented exports that live in them are let through until their comments
 * land. Each entry must still be undocumented and in one of these files, so the list can only shrink.
 */
const PENDING_FILES = [
  'packages/runtime/src/manager/manager.ts',
  'packages/runtime/src/testing/',
  'packages/testenv/src/environment.ts',
];
const PENDING_UNDOCUMENTED: readonly string[] = [];

let ref: Reference;
before(async () => {
  ref = await convert();
});

test('openingComment: the file comment without its @module line; undefined without one', () => {
  assert.equal(openingComment('/**\n * @module a/b\n * Does a.\n *\n * More.\n */\nexport {};\n'), 'Does a.\n\nMore.');
  assert.equal(openingComment('#!/usr/bin/env node\n/** One line. */\n'), 'One line.');
  assert.equal(openingComment('// not a doc comment\nexport {};\n'), undefined);
});

test('tsBlocks: the body of each ts fence, nothing of other languages', () => {
  const md = 'text\n```ts\nconst a = 1;\n```\n```sh\nls\n```\n```typescript\nlet b;\n```\n';
  assert.deepEqual(tsBlocks(md), ['const a = 1;\n', 'let b;\n']);
});

/** Fails listing `lines` under `title` when there are any. */
function none(lines: readonly string[], title: string): void {
  assert.ok(lines.length === 0, `${title}:\n  ${lines.join('\n  ')}`);
}

test('every entry point opens with a @module comment (TypeDoc gives a file comment without one to the first export)', async () => {
  const without: string[] = [];
  for (const e of await entryPoints())
    if (!/^(?:#!.*\n)?\s*\/\*\*\s*\n\s*\*\s*@module\b/.test(await readFile(e.file, 'utf8')))
      without.push(relative(ROOT, e.file));
  none(without, 'these entry points open without `/**` and a first line `@module <name>`');
});

test('every public export has a doc comment', () => {
  const missing = undocumented(ref);
  const pending = new Set(PENDING_UNDOCUMENTED);
  none(
    missing.filter((u) => !pending.has(u.name)).map((u) => `${u.name} (${u.file})`),
    `${missing.length - pending.size} public declarations have no doc comment; add one (a terse statement of the contract)`,
  );
  const fileOf = new Map(missing.map((u) => [u.name, u.file]));
  none(
    PENDING_UNDOCUMENTED.filter((name) => !fileOf.has(name)),
    'these are documented now (or gone): remove them from PENDING_UNDOCUMENTED',
  );
  none(
    PENDING_UNDOCUMENTED.filter((name) => !PENDING_FILES.some((f) => (fileOf.get(name) ?? '').startsWith(f))),
    'PENDING_UNDOCUMENTED may only hold declarations of PENDING_FILES',
  );
});

/** The block of docs/tutorial.md that writes `path` (its ```ts file=path fence). */
async function tutorialFile(path: string): Promise<string> {
  const tutorial = await readFile(join(ROOT, 'docs/tutorial.md'), 'utf8');
  const m = new RegExp(`^\`\`\`ts file=${path.replaceAll('.', '\\.')}\n([\\s\\S]*?)^\`\`\`$`, 'm').exec(tutorial);
  assert.ok(m?.[1], `docs/tutorial.md has no \`\`\`ts file=${path} block`);
  return m[1];
}

test('every @example and every module comment’s ts block type-checks as a user would write it', async () => {
  const found = [...examples(ref.project), ...(await moduleExamples())];
  assert.ok(found.length > 0, 'no @example blocks found');
  // Under node_modules/ so the examples resolve @opkit/* as a user's project does (the workspace links).
  const base = join(ROOT, 'node_modules', '.cache');
  await mkdir(base, { recursive: true });
  const dir = await mkdtemp(join(base, 'opkit-api-examples-'));
  try {
    // An example may import the tutorial's AppService kind from './appservice.ts', as a user's file imports its own.
    await writeFile(join(dir, 'appservice.ts'), await tutorialFile('src/api/v1alpha1/appservice.ts'));
    const names = new Map<string, string>();
    for (const [i, example] of found.entries()) {
      const file = `example-${i + 1}.ts`;
      names.set(file, example.name);
      // `export {}` keeps each file a module, so two examples' top-level names cannot collide; line numbers in the
      // messages are the example's own.
      await writeFile(join(dir, file), `${example.code}export {};\n`);
    }
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: relative(dir, join(ROOT, 'tsconfig.json')), include: ['*.ts'] }),
    );
    const r = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['--noEmit', '-p', join(dir, 'tsconfig.json')], {
      cwd: dir,
      encoding: 'utf8',
    });
    const output = `${r.stdout}${r.stderr}`.replace(/example-(\d+)\.ts/g, (file) => `${file} [${names.get(file)}]`);
    assert.equal(r.status, 0, `@example blocks that do not compile:\n${output}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

async function tree(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    out.set(relative(dir, path), await readFile(path, 'utf8'));
  }
  return out;
}

test(`${OUT_DIR}/ is what \`npm run docs\` generates`, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-api-'));
  try {
    await render(ref, join(dir, 'api'));
    const want = await tree(join(dir, 'api'));
    const have = await tree(join(ROOT, OUT_DIR));
    const differ = [...new Set([...want.keys(), ...have.keys()])]
      .filter((f) => want.get(f) !== have.get(f))
      .map((f) => `${f}: ${!have.has(f) ? 'missing' : !want.has(f) ? 'no longer generated' : 'differs'}`)
      .sort();
    none(differ, `${OUT_DIR}/ is out of date: run \`npm run docs\` and commit the result`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
