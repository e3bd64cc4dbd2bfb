import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { access } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { alive, waitFor } from './helpers.ts';

const FIXTURE = fileURLToPath(new URL('./fixtures/start-and-wait.ts', import.meta.url));

test('if the owning process is killed (SIGKILL), no component outlives it and the run directory is removed', async () => {
  const child = spawn(process.execPath, [FIXTURE], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`fixture exited with ${code}`)));
  });
  const { dir, pids } = JSON.parse(line) as { dir: string; pids: Record<string, number> };
  assert.equal(Object.keys(pids).length, 5);
  child.kill('SIGKILL');
  await waitFor('every component to end', async () => Object.values(pids).every((p) => !alive(p)), 20_000);
  await waitFor(
    'the run directory to be removed',
    async () =>
      access(dir).then(
        () => false,
        () => true,
      ),
    10_000,
  );
});
