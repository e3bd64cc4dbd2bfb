// `opkit generate --check` and the scaffold's `pretest`: nothing generated goes stale silently. A sample that the API
// no longer accepts fails --check naming the file and the field (checked offline by the apiserver's own validation);
// a permission added to a controller fails the scaffolded project's `npm test` before any test runs, naming the stale
// RBAC and the command that fixes it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { checkMemo } from '../src/generate/check-memo.ts';
import { loadApis } from '../src/generate/manifests.ts';
import { readProject } from '../src/project/project.ts';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));
const SOURCE_CONDITION = '--conditions=@opkit/source';

/** The environment of a user's shell in the project: this Node first on PATH, the workspace's sources resolved. */
function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter),
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${SOURCE_CONDITION}`.trim(),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
  };
  delete env.NODE_TEST_CONTEXT; // a nested test run must report as a top-level one
  return env;
}

function opkit(cwd: string, args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { cwd, encoding: 'utf8', env: userEnv(), timeout: 120_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

function npm(cwd: string, args: string[]) {
  const r = spawnSync('npm', args, { cwd, encoding: 'utf8', env: userEnv(), timeout: 180_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

describe('opkit generate --check and the scaffold’s pretest', () => {
  let work: string;
  let dir: string;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'opkit-generate-check-'));
    assert.equal(opkit(work, ['init', 'cron-operator', '--domain', 'example.org']).code, 0);
    dir = join(work, 'cron-operator');
    const link = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
    assert.equal(link.status, 0, link.stderr);
    // npm install puts the CLI's bin here; npm test's pretest runs it from there
    await mkdir(join(dir, 'node_modules/.bin'), { recursive: true });
    await symlink(MAIN, join(dir, 'node_modules/.bin/opkit'));
    const api = opkit(dir, [
      'create',
      'api',
      '--group',
      'batch',
      '--version',
      'v1',
      '--kind',
      'CronJob',
      '--controller',
    ]);
    assert.equal(api.code, 0, api.out);
  });
  after(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  test('a sample the changed API refuses fails --check naming the file and the field; generate reports it and never rewrites it', async () => {
    const samplePath = join(dir, 'config/samples/batch_v1_cronjob.yaml');
    const sample = await readFile(samplePath, 'utf8');
    const apiPath = join(dir, 'src/api/v1/cronjob.ts');
    const api = await readFile(apiPath, 'utf8');
    const field =
      "replicas: Defaulted(Type.Integer({ minimum: 0, format: 'int32', description: 'How many to run.' }), 1),";
    assert.ok(api.includes(field), 'the scaffolded API has its example field');
    // the API changes: a required field the sample does not have
    await writeFile(apiPath, api.replace(field, `${field}\n    schedule: Type.String({ maxLength: 64 }),`));
    const line =
      'config/samples/batch_v1_cronjob.yaml: spec.schedule: Required value — update the sample to the API in src/api/v1/cronjob.ts';

    const before = opkit(dir, ['generate', '--check']);
    assert.equal(before.code, 1, before.out);
    assert.match(
      before.out,
      /stale generated files \(run npx opkit generate\):\n {2}config\/crd\/bases\/batch\.example\.org_cronjobs\.yaml/,
    );
    assert.ok(before.out.includes(`\n  ${line}\n`), before.out);

    const generated = opkit(dir, ['generate']);
    assert.equal(generated.code, 0, generated.out);
    assert.match(generated.out, /wrote config\/crd\/bases\/batch\.example\.org_cronjobs\.yaml/);
    assert.ok(generated.out.includes(`\n  ${line}\n`), `plain generate reports the sample too:\n${generated.out}`);
    assert.equal(await readFile(samplePath, 'utf8'), sample, 'the sample is the user’s: never rewritten');

    const after = opkit(dir, ['generate', '--check']);
    assert.equal(after.code, 1, 'the generated files are up to date, the sample still fails --check');
    assert.doesNotMatch(after.out, /stale generated files/);
    assert.match(
      after.out,
      /samples the apiserver would refuse \(config\/samples\/ is yours: opkit generate never rewrites it\):/,
    );
    assert.ok(after.out.includes(line), after.out);

    await writeFile(samplePath, sample.replace('spec:\n', 'spec:\n  schedule: "*/5 * * * *"\n'));
    const fixed = opkit(dir, ['generate', '--check']);
    assert.equal(fixed.code, 0, fixed.out);
    assert.match(fixed.out, /generated files are up to date/);
  });

  test('a permission added to a controller fails npm test in its pretest, naming the stale RBAC and npx opkit generate', async (t) => {
    assert.equal(opkit(dir, ['generate']).code, 0);
    const up = npm(dir, ['run', 'pretest']);
    assert.equal(up.code, 0, up.out);
    const controllerPath = join(dir, 'src/controllers/cronjob.ts');
    const controller = await readFile(controllerPath, 'utf8');
    const granted = "permission(CronJobs, ['list', 'watch']),";
    assert.ok(controller.includes(granted), 'the scaffolded controller declares its permissions');
    await writeFile(controllerPath, controller.replace(granted, "permission(CronJobs, ['get', 'list', 'watch']),"));

    const started = performance.now();
    const tests = npm(dir, ['test']);
    t.diagnostic(`npm test stopped by its pretest in ${Math.round(performance.now() - started)} ms`);
    assert.notEqual(tests.code, 0, tests.out);
    assert.match(tests.out, /stale generated files \(run npx opkit generate\):/);
    assert.match(tests.out, /^ {2}config\/rbac\/role\.yaml$/m);
    assert.match(tests.out, /^ {2}dist\/install\.yaml$/m);
    assert.doesNotMatch(tests.out, /^(ℹ|#) tests \d+$/m, 'no test ran');

    assert.equal(npm(dir, ['exec', '--', 'opkit', 'generate']).code, 0);
    assert.match(await readFile(join(dir, 'config/rbac/role.yaml'), 'utf8'), /- get\n\s+- list\n\s+- watch/);
    const checkStarted = performance.now();
    const fixed = npm(dir, ['run', 'pretest']);
    const ms = Math.round(performance.now() - checkStarted);
    t.diagnostic(`npm run pretest (opkit generate --check) on an up-to-date project: ${ms} ms`);
    assert.equal(fixed.code, 0, fixed.out);
    assert.ok(ms < 30_000, `the pretest stays fast: ${ms} ms`);
  });

  test('a pass is reused only for the same inputs: a sample changed after it is checked again, a failure is never recorded', async () => {
    assert.equal(opkit(dir, ['generate']).code, 0);
    const record = join(dir, 'node_modules/.cache/opkit/generate-checks.json');
    await rm(record, { force: true });
    const memo = async () => {
      const project = await readProject(dir);
      return checkMemo(dir, project, await loadApis(dir, project));
    };
    assert.equal((await memo()).passed, false, 'nothing recorded yet');
    const first = opkit(dir, ['generate', '--check']);
    assert.equal(first.code, 0, first.out);
    const passes = () => readFile(record, 'utf8').then((t) => (JSON.parse(t) as { passes: string[] }).passes);
    assert.equal((await passes()).length, 1, 'the pass is recorded');
    assert.equal((await memo()).passed, true, 'the same inputs: the pass is reused, the validator not loaded');

    const samplePath = join(dir, 'config/samples/batch_v1_cronjob.yaml');
    const sample = await readFile(samplePath, 'utf8');
    assert.match(sample, /^ {2}replicas: \d+$/m);
    await writeFile(samplePath, sample.replace(/^ {2}replicas: \d+$/m, '  replicas: -1'));
    assert.equal((await memo()).passed, false, 'a sample changed: checked again');
    const broken = opkit(dir, ['generate', '--check']);
    assert.equal(broken.code, 1, broken.out);
    assert.match(broken.out, /config\/samples\/batch_v1_cronjob\.yaml: spec\.replicas: Invalid value: -1/);
    assert.equal((await passes()).length, 1, 'a failure is not recorded');
    assert.equal(opkit(dir, ['generate', '--check']).code, 1, 'and fails again');

    await writeFile(samplePath, sample);
    assert.equal((await memo()).passed, true, 'the inputs of the recorded pass again');
    await writeFile(record, '{ not json');
    const again = opkit(dir, ['generate', '--check']);
    assert.equal(again.code, 0, `a broken record is ignored: ${again.out}`);
    assert.equal((await passes()).length, 1, 'and written anew');
  });
});
