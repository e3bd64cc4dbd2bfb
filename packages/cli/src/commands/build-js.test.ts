import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { CliError } from '../errors.ts';
import { bundleOperator, runningConditions } from './build-js.ts';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function project(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-build-js-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) {
    await mkdir(join(dir, name, '..'), { recursive: true });
    await writeFile(join(dir, name), text);
  }
  return dir;
}

test('runningConditions: the --conditions of the flags and of NODE_OPTIONS, in every spelling', () => {
  assert.deepEqual(runningConditions(['--conditions=a', '-C', 'b'], '--max-old-space-size=96 -C=c --conditions d'), [
    'a',
    'b',
    'c',
    'd',
  ]);
  assert.deepEqual(runningConditions([], ''), []);
});

test('the bundle is one program with its lazy imports as chunks, and runs; non-ASCII text survives', async () => {
  const dir = await project({
    'src/main.ts': [
      "import { greet } from './greet.ts';",
      "const later = () => import('./later.ts');",
      'const n: number = 2;',
      'console.log(greet(n), (await later()).word);',
    ].join('\n'),
    'src/greet.ts': "export const greet = (n: number): string => 'grüß dich ×' + n;",
    'src/later.ts': "export const word = 'später';",
  });
  const lines: string[] = [];
  const main = await bundleOperator(dir, (l) => lines.push(l));
  assert.equal(main, join(dir, 'dist/operator/main.mjs'));
  assert.match(lines.join('\n'), /bundled src\/main\.ts into dist\/operator\/main\.mjs \(2 files\)/);
  const run = spawnSync(process.execPath, [main], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, 'grüß dich ×2 später\n');
});

test('a bundle that fails names the file and line, and leaves the previous bundle as it was', async () => {
  const dir = await project({ 'src/main.ts': "console.log('v1');\n" });
  await bundleOperator(dir, () => {});
  const before = await readFile(join(dir, 'dist/operator/main.mjs'), 'utf8');
  await writeFile(join(dir, 'src/main.ts'), "import { missing } from './nowhere.ts';\nconsole.log(missing);\n");
  await assert.rejects(
    bundleOperator(dir, () => {}),
    (err) =>
      err instanceof CliError &&
      err.code === 'Usage' &&
      /bundling src\/main\.ts failed: src\/main\.ts:1: Could not resolve "\.\/nowhere\.ts"/.test(err.message),
  );
  assert.equal(await readFile(join(dir, 'dist/operator/main.mjs'), 'utf8'), before, 'the previous bundle is kept');
  assert.deepEqual(
    (await readdir(join(dir, 'dist'))).filter((f) => f !== 'operator'),
    [],
    'no staging folder left behind',
  );
});
