import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { run } from '../src/index.ts';

async function opkit(args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await run(
    args,
    (l) => lines.push(l),
    (l) => lines.push(l),
  );
  return { code, out: lines.join('\n') };
}

describe('input checks: each error names the bad value and the rule; nothing the user had is touched', () => {
  let work: string;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'opkit-inputs-'));
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
  });

  test('init refuses bad names and an existing project', async () => {
    const bad = await opkit(['init', 'My_Operator', '--dir', join(work, 'a')]);
    assert.equal(bad.code, 2);
    assert.match(bad.out, /project name "My_Operator" must be lower-case/);
    assert.match(
      (await opkit(['init', 'ok', '--domain', 'Example.COM', '--dir', join(work, 'b')])).out,
      /domain "Example\.COM" must be a DNS-1123 subdomain/,
    );
    assert.match(
      (await opkit(['init', 'ok', '--image', 'bad image', '--dir', join(work, 'c')])).out,
      /image "bad image"/,
    );
    assert.equal((await opkit(['init', 'good', '--dir', join(work, 'good')])).code, 0);
    const again = await opkit(['init', 'good', '--dir', join(work, 'good')]);
    assert.equal(again.code, 2);
    assert.match(again.out, /already a project/);
    const mine = join(work, 'mine');
    await mkdir(mine, { recursive: true });
    await writeFile(join(mine, 'package.json'), '{"name":"mine"}\n');
    const refused = await opkit(['init', 'mine', '--dir', mine]);
    assert.equal(refused.code, 2);
    assert.match(refused.out, /package\.json already exists and is yours/);
    assert.equal(
      await readFile(join(mine, 'package.json'), 'utf8'),
      '{"name":"mine"}\n',
      'the user’s file is untouched',
    );
  });

  test('create api checks kind, group, version, duplicates and never overwrites a user file', async () => {
    const dir = join(work, 'good');
    const cases: [string[], RegExp][] = [
      [['--group', 'app', '--version', 'v1', '--kind', 'lowercase'], /kind "lowercase" must be UpperCamelCase/],
      [
        ['--group', 'App_Group', '--version', 'v1', '--kind', 'Thing'],
        /group "App_Group" must be a DNS-1123 subdomain/,
      ],
      [
        ['--group', 'app', '--version', '1.0', '--kind', 'Thing'],
        /version "1\.0" must look like v1, v1alpha1 or v2beta3/,
      ],
      [
        ['--group', 'app', '--version', 'v1', '--kind', 'Thing', '--namespaced', 'maybe'],
        /--namespaced must be true or false/,
      ],
      [['--group', 'app', '--version', 'v1'], /--kind is required/],
    ];
    for (const [args, message] of cases) {
      const r = await opkit(['create', 'api', ...args, '--dir', dir]);
      assert.equal(r.code, 2, r.out);
      assert.match(r.out, message);
    }
    await mkdir(join(dir, 'src/api/v1'), { recursive: true });
    await writeFile(join(dir, 'src/api/v1/thing.ts'), '// my own file\n');
    const clash = await opkit(['create', 'api', '--group', 'app', '--version', 'v1', '--kind', 'Thing', '--dir', dir]);
    assert.equal(clash.code, 2);
    assert.match(clash.out, /thing\.ts already exists and is yours \(not generated\): nothing was written/);
    assert.equal(await readFile(join(dir, 'src/api/v1/thing.ts'), 'utf8'), '// my own file\n');
    assert.doesNotMatch(await readFile(join(dir, 'PROJECT'), 'utf8'), /Thing/, 'PROJECT unchanged');
    const outside = await opkit([
      'create',
      'api',
      '--group',
      'app',
      '--version',
      'v1',
      '--kind',
      'Thing',
      '--dir',
      work,
    ]);
    assert.match(outside.out, /PROJECT not found: run this inside an opkit project/);
    assert.match((await opkit(['create', 'widget'])).out, /create an api or a webhook \(opkit create webhook --help\)/);
  });

  test('build: names docker, podman and buildah when none is on PATH; otherwise runs the first found', async () => {
    const dir = join(work, 'good');
    const empty = join(work, 'empty-bin');
    await mkdir(empty, { recursive: true });
    const saved = process.env.PATH;
    try {
      process.env.PATH = empty;
      const none = await opkit(['build', '--dir', dir]);
      assert.equal(none.code, 2);
      assert.match(none.out, /no container build tool found: install one of docker, podman, buildah/);
      const fake = join(work, 'fake-bin');
      await mkdir(fake, { recursive: true });
      await writeFile(join(fake, 'podman'), `#!/bin/sh\necho "$@" > "${join(work, 'podman-args')}"\n`);
      await chmod(join(fake, 'podman'), 0o755);
      process.env.PATH = fake;
      const dry = await opkit(['build', '--dir', dir, '--image', 'reg.example/good:1', '--dry-run']);
      assert.equal(dry.code, 0);
      assert.match(dry.out, /^podman build -t reg\.example\/good:1 -f .*\/Dockerfile /m);
      const real = await opkit(['build', '--dir', dir, '--image', 'reg.example/good:1']);
      assert.equal(real.code, 0, real.out);
      assert.match(await readFile(join(work, 'podman-args'), 'utf8'), /^build -t reg\.example\/good:1 -f /);
    } finally {
      process.env.PATH = saved;
    }
  });

  test('bundle checks its version and channels', async () => {
    const dir = join(work, 'good');
    assert.match((await opkit(['bundle', '--dir', dir])).out, /--version is required/);
    assert.match(
      (await opkit(['bundle', '--version', '1.0', '--dir', dir])).out,
      /bundle version "1\.0" must be a semantic version/,
    );
    assert.match(
      (
        await opkit([
          'bundle',
          '--version',
          '1.0.0',
          '--channels',
          'alpha',
          '--default-channel',
          'stable',
          '--dir',
          dir,
        ])
      ).out,
      /--default-channel "stable" is not one of/,
    );
  });

  test('unknown commands and flags are usage errors', async () => {
    assert.equal((await opkit(['frobnicate'])).code, 2);
    const flag = await opkit(['generate', '--frob']);
    assert.equal(flag.code, 2);
    assert.match(flag.out, /--frob/);
  });

  test('file-system failures are one line naming the path and what to do, never a stack trace', async () => {
    const file = join(work, 'a-file');
    await writeFile(file, 'mine\n');
    const init = await opkit(['init', 'fileop', '--dir', file]);
    assert.equal(init.code, 2, init.out);
    assert.match(init.out, /^opkit: --dir .*a-file is a file, not a directory: pass a directory/);
    assert.equal(init.out.split('\n').length, 1, init.out);
    assert.equal(await readFile(file, 'utf8'), 'mine\n', 'the file is untouched');

    const dir = join(work, 'fsop');
    assert.equal((await opkit(['init', 'fsop', '--dir', dir])).code, 0);
    await writeFile(join(dir, 'config'), 'my notes, not a directory\n');
    const gen = await opkit(['generate', '--dir', dir]);
    assert.equal(gen.code, 1, gen.out);
    assert.match(gen.out, /^opkit: .*fsop\/config.*: (a part of this path is a file|already exists)/);
    assert.equal(gen.out.split('\n').length, 1, gen.out);
    assert.doesNotMatch(gen.out, /\n\s+at /);
  });

  test('init refuses a project name whose derived names the API server would refuse, naming the derived object', async () => {
    const digit = await opkit(['init', '9ops', '--dir', join(work, 'nine')]);
    assert.equal(digit.code, 2, digit.out);
    assert.match(digit.out, /project name "9ops" must start with a letter: the metrics Service is named 9ops-metrics/);
    const n56 = 'a'.repeat(56);
    const long = await opkit(['init', n56, '--dir', join(work, 'n56')]);
    assert.equal(long.code, 2, long.out);
    assert.match(long.out, /is 56 characters; at most 55 fit: the metrics Service a+-metrics would be 64, over .* 63/);
    const n58 = await opkit(['init', 'b'.repeat(58), '--dir', join(work, 'n58')]);
    assert.equal(n58.code, 2);
    assert.match(n58.out, /project name "b{58}" is 58 characters/);
    assert.doesNotMatch(n58.out, /namespace/, 'no error about a namespace the user never passed');
    const n55 = await opkit(['init', 'c'.repeat(55), '--dir', join(work, 'n55')]);
    assert.equal(n55.code, 0, n55.out);
  });

  test('deploy checks every object name before applying anything', async () => {
    const dir = join(work, 'renamed');
    assert.equal((await opkit(['init', 'renamed', '--dir', dir])).code, 0);
    const project = join(dir, 'PROJECT');
    await writeFile(project, (await readFile(project, 'utf8')).replace('projectName: renamed', 'projectName: 9ops'));
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = join(work, 'no-such-kubeconfig');
    try {
      for (const command of ['deploy', 'undeploy']) {
        const r = await opkit([command, '--dir', dir]);
        assert.equal(r.code, 2, r.out);
        assert.match(
          r.out,
          /nothing was (applied|deleted): the API server would refuse Service 9ops-metrics: a Service/,
        );
        assert.match(r.out, /fix projectName or namespace in .*PROJECT/);
      }
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  test('create api is all or nothing: when generate fails, nothing is kept and the same command can be run again', async () => {
    const dir = join(work, 'atomic');
    assert.equal((await opkit(['init', 'atomic', '--dir', dir])).code, 0);
    const main = await readFile(join(dir, 'src/main.ts'), 'utf8');
    const project = await readFile(join(dir, 'PROJECT'), 'utf8');
    const setup = await readFile(join(dir, 'test/setup.ts'), 'utf8'); // init's: create api must leave it be
    // this project has no node_modules, so generate cannot load the new API file: a failure after the first write
    const args = [...'create api --group app --version v1 --kind Widget --controller --dir'.split(' '), dir];
    for (const attempt of [1, 2]) {
      const r = await opkit(args);
      assert.notEqual(r.code, 0, r.out);
      assert.match(r.out, /cannot load .*widget\.ts/, `attempt ${attempt}`);
      assert.match(r.out, /nothing was kept: the files of Widget, src\/main\.ts and PROJECT are as they were/);
      assert.doesNotMatch(r.out, /already/, 'a retry is not refused');
      assert.equal(r.out.split('\n').length, 1, r.out);
      assert.equal(await readFile(join(dir, 'src/main.ts'), 'utf8'), main);
      assert.equal(await readFile(join(dir, 'PROJECT'), 'utf8'), project);
      for (const gone of ['src/api', 'src/controllers', 'test/widget.test.ts', 'config/samples']) {
        await assert.rejects(readFile(join(dir, gone)), { code: 'ENOENT' }, `${gone} removed`);
      }
      assert.equal(await readFile(join(dir, 'test/setup.ts'), 'utf8'), setup, "init's test/setup.ts kept");
    }
  });

  test('bundle refuses a version that would make an invalid CSV name, and keeps hand edits to the CSV', async () => {
    const dir = join(work, 'good');
    const rc = await opkit(['bundle', '--version', '1.0.0-RC1', '--dir', dir]);
    assert.equal(rc.code, 2);
    assert.match(rc.out, /bundle version "1\.0\.0-RC1" must be lower-case: .*ClusterServiceVersion name.*1\.0\.0-rc1/);
    assert.equal((await opkit(['bundle', '--version', '1.0.0-rc1', '--dir', dir])).code, 0);
    const csvPath = join(dir, 'bundle/manifests/good.clusterserviceversion.yaml');
    const csv = await readFile(csvPath, 'utf8');
    assert.match(csv, /name: good\.v1\.0\.0-rc1/);
    await writeFile(
      csvPath,
      csv
        .replace(/description: .*/, 'description: My own words about this operator.')
        .replace(/^spec:\n/m, 'spec:\n  icon:\n    - base64data: PHN2Zy8+\n      mediatype: image/svg+xml\n'),
    );
    assert.equal((await opkit(['bundle', '--version', '1.1.0', '--dir', dir])).code, 0);
    const again = await readFile(csvPath, 'utf8');
    assert.match(again, /description: My own words about this operator\./, again);
    assert.match(again, /base64data: PHN2Zy8\+/);
    assert.match(again, /name: good\.v1\.1\.0/);
    assert.match(again, /^ {2}version: 1\.1\.0$/m);
  });

  test('deploy and undeploy never switch to another cluster when the current one does not answer', async () => {
    const dir = join(work, 'good');
    const kubeconfig = (port: number) =>
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      });
    // the current kubeconfig's cluster does not answer; a "ready" opkit env cluster exists, its daemon alive
    await writeFile(join(work, 'current.kubeconfig'), kubeconfig(1));
    const state = join(work, 'state');
    const clusterDir = join(state, 'clusters/default');
    await mkdir(clusterDir, { recursive: true });
    await writeFile(join(work, 'dev.kubeconfig'), kubeconfig(2));
    await writeFile(
      join(clusterDir, 'status.json'),
      JSON.stringify({ phase: 'ready', server: 'https://127.0.0.1:2', kubeconfigPath: join(work, 'dev.kubeconfig') }),
    );
    // a stand-in for the daemon: a live process whose command line names the cluster's directory
    const daemon = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)', clusterDir], { stdio: 'ignore' });
    await writeFile(join(clusterDir, 'daemon.json'), JSON.stringify({ pid: daemon.pid, startedAt: '' }));
    const saved = { KUBECONFIG: process.env.KUBECONFIG, OPKIT_STATE_DIR: process.env.OPKIT_STATE_DIR };
    process.env.KUBECONFIG = join(work, 'current.kubeconfig');
    process.env.OPKIT_STATE_DIR = state;
    try {
      for (const command of ['deploy', 'undeploy']) {
        const r = await opkit([command, '--dir', dir]);
        assert.equal(r.code, 1, r.out);
        assert.match(r.out, /the cluster of the current kubeconfig \(https:\/\/127\.0\.0\.1:1\) does not answer/);
        assert.match(r.out, /never switches to another cluster/);
        assert.match(r.out, /opkit env up's: --kubeconfig .*dev\.kubeconfig/);
        assert.doesNotMatch(r.out, /127\.0\.0\.1:2/, 'the dev cluster was not used');
      }
    } finally {
      daemon.kill();
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});
