/**
 * The documentation's links resolve: every relative link of README.md and of each Markdown file under docs/ (the
 * guides and the generated API reference) names a file or folder of the repository, and its `#anchor`, when it has
 * one and points into Markdown, names a heading of that file (by GitHub's rule for heading ids) or an explicit
 * `<a id>` / `<a name>`. Links to other sites are not fetched.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The text as rendered, without code: fenced blocks and inline code spans blanked, lines kept. */
function withoutCode(markdown: string): string {
  return markdown
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/(`+)[\s\S]*?\1/g, (span) => span.replace(/[^\n]/g, ' '));
}

/** GitHub's id for a heading: its text, lower-cased, without punctuation, spaces as hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images keep their text
    .replace(/(?<!\\)<[^>]+>/g, '') // inline HTML (not an escaped \<)
    .replace(/\\(.)/g, '$1') // escapes
    .replace(/[*_`~]/g, (c) => (c === '_' ? '_' : '')); // emphasis and code marks
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file: its headings' ids (repeats get -1, -2, … as on GitHub) and `<a id|name>`. */
export function anchors(markdown: string): Set<string> {
  const out = new Set<string>();
  const counts = new Map<string, number>();
  const lines = markdown.split('\n');
  const plain = withoutCode(markdown).split('\n');
  for (const [i, line] of plain.entries()) {
    const m = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    // The heading's own text (with its inline code), from the original line.
    const original = (lines[i] as string).replace(/^ {0,3}#{1,6}\s+/, '').replace(/\s+#+\s*$/, '');
    const base = slug(original);
    const n = counts.get(base) ?? 0;
    counts.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1] as string);
  return out;
}

/** The link targets of a Markdown file outside code: inline `[text](target)` and reference definitions. */
export function links(markdown: string): { target: string; line: number }[] {
  const text = withoutCode(markdown);
  const out: { target: string; line: number }[] = [];
  const lineOf = (index: number) => text.slice(0, index).split('\n').length;
  // a `]` after an odd number of backslashes is an escaped bracket (CommonMark), not the end of a link's text
  for (const m of text.matchAll(/(?<=(?:^|[^\\])(?:\\\\)*)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    out.push({ target: m[1] as string, line: lineOf(m.index) });
  for (const m of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+"[^"]*")?\s*$/gm))
    out.push({ target: m[1] as string, line: lineOf(m.index) });
  return out;
}

test('slug and anchors follow GitHub: punctuation dropped, code kept, repeats numbered', () => {
  assert.equal(slug('Class: Store\\<T\\>'), 'class-storet');
  assert.equal(slug('`opkit run` for development'), 'opkit-run-for-development');
  assert.equal(slug('byIndex()'), 'byindex');
  assert.equal(slug('Requirements (Node ≥ 24.11)'), 'requirements-node--2411');
  assert.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n<a id="x"></a>\n')], ['a', 'a-1', 'x']);
});

test('links: inline and reference links outside code', () => {
  const md = '[a](x.md#y) `[b](not.md)`\n```\n[c](code.md)\n```\n[d]: ../z.md\n[e](https://example.com)';
  assert.deepEqual(
    links(md).map((l) => l.target),
    ['x.md#y', 'https://example.com', '../z.md'],
  );
  // an escaped bracket ends no link text (a regular expression in a generated page); an escaped backslash does
  assert.deepEqual(
    links('\\[eE\\](\\+|-) [f\\\\](f.md)').map((l) => l.target),
    ['f.md'],
  );
});

async function markdownFiles(): Promise<string[]> {
  const docs = (await readdir(join(ROOT, 'docs'), { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => join(e.parentPath, e.name));
  return [join(ROOT, 'README.md'), ...docs].sort();
}

test('every relative link and #anchor in README.md and docs/ resolves', async () => {
  const files = await markdownFiles();
  const cache = new Map<string, Set<string>>();
  const anchorsOf = async (file: string): Promise<Set<string>> => {
    let found = cache.get(file);
    if (!found) {
      found = anchors(await readFile(file, 'utf8'));
      cache.set(file, found);
    }
    return found;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const { target, line } of links(await readFile(file, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      const hash = target.indexOf('#');
      const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const dest = path === '' ? file : resolve(dirname(file), path);
      const where = `${relative(ROOT, file)}:${line}: ${target}`;
      const info = await stat(dest).catch(() => undefined);
      if (!info) {
        broken.push(`${where} (no such file)`);
        continue;
      }
      if (anchor !== undefined && info.isFile() && dest.endsWith('.md') && !(await anchorsOf(dest)).has(anchor))
        broken.push(`${where} (no heading #${anchor} in ${relative(ROOT, dest)})`);
    }
  }
  assert.ok(broken.length === 0, `broken links:\n  ${broken.join('\n  ')}`);
});
