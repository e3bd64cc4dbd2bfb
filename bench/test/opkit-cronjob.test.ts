/**
 * The kubebuilder CronJob port (bench/peers/opkit-cronjob), the anchor of `npm run bench -- suites`, passes its own
 * `npm test` as a user runs it: the scaffold's pretest (`opkit generate --check`: its CRD, RBAC and samples are
 * current) and `opkit test` over its four files on one control plane.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { nodeTestCounts, opkitBin } from '../src/scenarios/suites.ts';

const PROJECT = fileURLToPath(new URL('../peers/opkit-cronjob/', import.meta.url));
const REPO_BIN = fileURLToPath(new URL('../../node_modules/.bin/', import.meta.url));

test('the CronJob port’s npm test passes, every test of its four files run', { timeout: 300_000 }, async () => {
  const bin = await opkitBin();
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${bin}:${REPO_BIN}:${process.env.PATH ?? ''}`,
      NODE_OPTIONS: '--conditions=@opkit/source',
    };
    delete env.NODE_TEST_CONTEXT; // a nested test run must report as a top-level one
    delete env.OPKIT_TESTENV_SHARED; // and start the control plane of its own run
    const r = spawnSync('npm', ['test'], { cwd: PROJECT, encoding: 'utf8', env });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 0, out.slice(-4000));
    const counts = nodeTestCounts(out);
    assert.deepEqual(counts, { tests: 31, failed: 0 }, out.slice(-4000));
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
});
