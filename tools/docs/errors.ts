/**
 * @module tools/docs/errors
 * The error table (docs/errors.md), read from the sources: every `export type …ErrorCode =` union of string literals
 * in a package's `src/` (tests excluded), each member with the doc comment written above it, and the class that
 * carries that union (`class X extends OpkitError<…ErrorCode>`, or a package's own base with a `code: …ErrorCode`
 * field). Guarantees: `collectErrorCodes` lists every code once per union, in source order, with its package, class,
 * file and doc (empty when none is written); `renderErrorTable` is a pure function of that list.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** One code of one error union. */
export interface ErrorCodeEntry {
  /** The workspace, e.g. `packages/runtime`. */
  readonly pkg: string;
  /** The npm name of that workspace, e.g. `@opkit/runtime`. */
  readonly pkgName: string;
  /** The file declaring the union, relative to the repository root. */
  readonly file: string;
  /** The union's name, e.g. `ApiErrorCode`. */
  readonly union: string;
  /** The class whose `code` has that union's type (empty when no class names it). */
  readonly cls: string;
  readonly code: string;
  /** The doc comment above the member, on one line (empty when none). */
  readonly doc: string;
}

/** The workspaces whose errors are listed, in the table's order. */
export const ERROR_PACKAGES = ['packages/runtime', 'packages/testenv', 'packages/cli'] as const;

async function* sources(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* sources(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.fixture.ts'))
      yield path;
  }
}

/** A union ends at its last literal's `';` (a doc comment may hold semicolons, not that pair). */
const UNION = /export type (\w+ErrorCode)\s*=([\s\S]*?')\s*;/g;
const MEMBER = /(?:\/\*\*([\s\S]*?)\*\/\s*)?\|?\s*'([^']+)'/g;

function oneLine(doc: string | undefined): string {
  return (doc ?? '')
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, '').trim())
    .filter(Boolean)
    .join(' ');
}

/** The source files of `pkg` (repository-relative), for the checks that read them. */
export async function sourceFiles(root: string, pkg: string): Promise<string[]> {
  const out: string[] = [];
  for await (const path of sources(join(root, pkg, 'src'))) out.push(relative(root, path));
  return out.sort();
}

/** Every error code declared in the listed packages' sources. */
export async function collectErrorCodes(root: string): Promise<ErrorCodeEntry[]> {
  const entries: ErrorCodeEntry[] = [];
  for (const pkg of ERROR_PACKAGES) {
    const pkgName = (JSON.parse(await readFile(join(root, pkg, 'package.json'), 'utf8')) as { name: string }).name;
    for (const file of await sourceFiles(root, pkg)) {
      const text = await readFile(join(root, file), 'utf8');
      for (const [, union = '', body = ''] of text.matchAll(UNION)) {
        const cls =
          new RegExp(`class (\\w+) extends OpkitError<${union}>`).exec(text)?.[1] ??
          new RegExp(`class (\\w+) extends Error \\{[\\s\\S]*?readonly code: ${union};`).exec(text)?.[1] ??
          '';
        for (const [, doc, code = ''] of body.matchAll(MEMBER))
          entries.push({ pkg, pkgName, file, union, cls, code, doc: oneLine(doc) });
      }
    }
  }
  return entries;
}

/** docs/errors.md for `entries`. */
export function renderErrorTable(entries: readonly ErrorCodeEntry[]): string {
  const lines = [
    '# Errors',
    '',
    '<!-- Written by `npm run docs` from the sources (tools/docs/errors.ts); test/source-rules.test.ts checks it is current. -->',
    '',
    'Every error a package throws is one class of that package (`OpkitError` subclasses in `@opkit/runtime`, `TestenvError`',
    'in `@opkit/testenv`, `CliError` in `@opkit/cli`), with a `code` that no other error of the same package has. Switch on',
    "`code`; never on the message, which is for people. A wrapped failure is the error's `cause`.",
  ];
  for (const pkg of ERROR_PACKAGES) {
    const rows = entries.filter((e) => e.pkg === pkg);
    if (rows.length === 0) continue;
    lines.push('', `## ${rows[0]?.pkgName}`, '', '| Code | Class | Meaning |', '| --- | --- | --- |');
    const sorted = [...rows].sort((a, b) => a.code.localeCompare(b.code, 'en'));
    for (const e of sorted) lines.push(`| \`${e.code}\` | \`${e.cls}\` | ${e.doc.replaceAll('|', '\\|')} |`);
  }
  return `${lines.join('\n')}\n`;
}
