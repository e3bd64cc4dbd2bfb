import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { createProject } from './create.ts';

let work = '';
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'create-opkit-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

function capture() {
  const lines: string[] = [];
  return { lines, write: (line: string) => lines.push(line) };
}

test('a project name that is already a folder is refused in one line, and the folder is left as it was', async () => {
  const dir = join(work, 'taken');
  await mkdir(dir);
  await writeFile(join(dir, 'notes.txt'), 'mine');
  const out = capture();
  const err = capture();
  const code = await createProject(['taken', '--domain', 'example.com'], work, out.write, err.write);
  assert.equal(code, 1);
  assert.equal(err.lines.length, 1);
  assert.match(err.lines[0] ?? '', /taken already exists: choose another name, or move it away first/);
  assert.deepEqual(await readdir(dir), ['notes.txt']);
  assert.equal(await readFile(join(dir, 'notes.txt'), 'utf8'), 'mine');
});

test('a new name gets a project, with the options after -- passed to opkit init', async () => {
  const dir = join(work, 'fresh-operator');
  const out = capture();
  const err = capture();
  const code = await createProject(['fresh-operator', '--domain', 'acme.io', '--dir', dir], work, out.write, err.write);
  assert.equal(code, 0, err.lines.join('\n'));
  const project = await readFile(join(dir, 'PROJECT'), 'utf8');
  assert.match(project, /domain: acme\.io/);
  const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { name: string };
  assert.equal(manifest.name, 'fresh-operator');
});

test('no name: one line saying how to call it', async () => {
  const err = capture();
  assert.equal(await createProject([], work, () => {}, err.write), 2);
  assert.deepEqual(err.lines, [
    'create-opkit: name the project, e.g. npm create opkit@latest my-operator -- --domain example.com',
  ]);
});
