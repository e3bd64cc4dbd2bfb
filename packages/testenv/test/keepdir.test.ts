import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import { test } from 'node:test';
import { start } from '../src/index.ts';

test('a run directory kept with keepDir survives the next start() in another process (multi-file suites)', {
  timeout: 300_000,
}, async () => {
  // the first "test file": its own process starts an environment with keepDir, stops it and exits
  const index = new URL('../src/index.ts', import.meta.url).href;
  const first = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { start } = await import(${JSON.stringify(index)});
       const env = await start({ nodes: 0, keepDir: true, log: () => {} });
       await env.stop();
       process.stdout.write(env.dir);`,
    ],
    { encoding: 'utf8', timeout: 240_000 },
  );
  assert.equal(first.status, 0, first.stderr);
  const kept = first.stdout.trim();
  // the second "test file": start() reaps run directories of dead owners
  const env = await start({ nodes: 0, log: () => {} });
  await env.stop();
  const files = await readdir(kept);
  assert.ok(files.includes('kube-apiserver.log'), `the kept logs are still there: ${files.join(', ')}`);
  assert.match(await readFile(`${kept}/KEPT`, 'utf8'), /keepDir/);
  await rm(kept, { recursive: true, force: true });
});
