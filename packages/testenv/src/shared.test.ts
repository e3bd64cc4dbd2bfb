import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { isTestenvError } from './errors.ts';
import { SHARED_ENVIRONMENT_VARIABLE, sharedEnvironment } from './shared.ts';

test('a shared environment that is not running fails with NotRunning, naming the variable and what to do', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-shared-'));
  const saved = process.env[SHARED_ENVIRONMENT_VARIABLE];
  try {
    for (const state of [undefined, { ownerPid: 2 ** 22 + 1, server: 'https://127.0.0.1:1', kubeconfigPath: 'x' }]) {
      if (state) await writeFile(join(dir, 'state.json'), JSON.stringify(state));
      process.env[SHARED_ENVIRONMENT_VARIABLE] = dir;
      await assert.rejects(sharedEnvironment(), (err: unknown) => {
        assert.ok(isTestenvError(err, 'NotRunning'));
        assert.match(err.message, new RegExp(`${SHARED_ENVIRONMENT_VARIABLE}=${dir} names no running environment`));
        assert.match(err.message, /--test-global-setup/);
        return true;
      });
    }
  } finally {
    if (saved === undefined) delete process.env[SHARED_ENVIRONMENT_VARIABLE];
    else process.env[SHARED_ENVIRONMENT_VARIABLE] = saved;
    await rm(dir, { recursive: true, force: true });
  }
});
