/**
 * One control plane for a `node --test` run (`shareEnvironment` as the global setup, `sharedEnvironment()` in the
 * files), run as a user's project runs it: a real test runner in a child process, over two test files.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

const index = JSON.stringify(new URL('../src/index.ts', import.meta.url).href);

/** This process's environment without `names` (a runner's context, a shared control plane of an outer run). */
function envWithout(...names: string[]): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of names) delete env[name];
  return env;
}

/** A test file that attaches, records what it saw in `<name>.json`, and creates a namespace named after itself. */
const testFile = (name: string, other: string) => `
import { after, test } from 'node:test';
import { writeFile } from 'node:fs/promises';
import { sharedEnvironment } from ${index};
test('${name}', async () => {
  const env = await sharedEnvironment({ nodes: 0, log: () => {} });
  after(() => env.release());
  const ns = await env.api.request({ method: 'POST', path: '/api/v1/namespaces', body: { metadata: { name: '${name}' } } });
  const otherNs = await env.api.request({ path: '/api/v1/namespaces/${other}' });
  await env.kubeconfigFor({ name: 'sa-${name}' });
  await writeFile(${JSON.stringify('OUT')} + '/${name}.json', JSON.stringify({
    owned: env.owned, dir: env.dir, server: env.server, created: ns.status, otherSeen: otherNs.status, pid: process.pid,
  }));
});
`;

async function project(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'opkit-shared-'));
  await writeFile(
    join(dir, 'setup.ts'),
    `import { shareEnvironment } from ${index};\nexport const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 0, log: () => {} });\n`,
  );
  for (const [name, other] of [
    ['first', 'second'],
    ['second', 'first'],
  ] as const) {
    await writeFile(join(dir, `${name}.test.ts`), testFile(name, other).replaceAll('OUT', dir));
  }
  return dir;
}

const seen = async (dir: string, name: string) =>
  JSON.parse(await readFile(join(dir, `${name}.json`), 'utf8')) as {
    owned: boolean;
    dir: string;
    server: string;
    created: number;
    otherSeen: number;
    pid: number;
  };

test('the global setup starts one control plane; both test files attach to it; the teardown stops it', {
  timeout: 300_000,
}, async () => {
  const dir = await project();
  try {
    const run = spawnSync(
      process.execPath,
      ['--test', '--test-global-setup=setup.ts', '--test-concurrency=1', 'first.test.ts', 'second.test.ts'],
      { cwd: dir, encoding: 'utf8', timeout: 240_000, env: envWithout('NODE_TEST_CONTEXT', 'OPKIT_TESTENV_SHARED') },
    );
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const [first, second] = [await seen(dir, 'first'), await seen(dir, 'second')];
    assert.notEqual(first.pid, second.pid, 'each file ran in its own process');
    assert.equal(first.server, second.server, 'one apiserver for both');
    assert.equal(first.dir, second.dir);
    assert.deepEqual([first.owned, second.owned], [false, false], 'attached, not started');
    assert.equal(first.created, 201);
    assert.equal(second.otherSeen, 200, "the second file sees the first file's namespace: the same cluster");
    await assert.rejects(stat(first.dir), 'the teardown stopped it and removed its run directory');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a test file run alone (no global setup) starts a control plane of its own and stops it on release()', {
  timeout: 300_000,
}, async () => {
  const dir = await project();
  try {
    const run = spawnSync(process.execPath, ['--test', 'first.test.ts'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 240_000,
      env: envWithout('NODE_TEST_CONTEXT', 'OPKIT_TESTENV_SHARED'),
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    const first = await seen(dir, 'first');
    assert.equal(first.owned, true);
    assert.equal(first.otherSeen, 404, 'a cluster of its own');
    await assert.rejects(stat(first.dir), 'release() stopped it and removed its run directory');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
