/**
 * Runs docs/tutorial.md: every ```sh line in order (through sh, in a temp dir), every ```ts file=… block written where
 * it says — against a real local cluster from `opkit env up`. `npx` and `npm` are shims: `npx opkit` runs this
 * workspace's CLI, `npm install` links this workspace's packages (nothing is published to a registry yet), `npm test`
 * runs the project's tests as its package.json script does.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { binaryCacheDir } from '@opkit/testenv';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CLI = join(ROOT, 'packages/cli/src/main.ts');
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));

interface Step {
  kind: 'sh' | 'file';
  text: string;
  path?: string;
}

function steps(markdown: string): Step[] {
  const out: Step[] = [];
  for (const m of markdown.matchAll(/```(\w+)([^\n]*)\n([\s\S]*?)```/g)) {
    const [, lang, info, body] = m as unknown as [string, string, string, string];
    const file = /file=(\S+)/.exec(info)?.[1];
    if (file) out.push({ kind: 'file', path: file, text: body });
    else if (lang === 'sh')
      for (const line of body.split('\n'))
        if (line.trim() && !line.trim().startsWith('#')) out.push({ kind: 'sh', text: line.trim() });
  }
  return out;
}

const background: ChildProcess[] = [];
let work = '';
let env: NodeJS.ProcessEnv = {};
after(async () => {
  for (const p of background) if (p.pid) process.kill(-p.pid, 'SIGTERM');
  if (work) {
    spawnSync(process.execPath, [CLI, 'env', 'down'], { env });
    await rm(work, { recursive: true, force: true });
  }
});

test('the tutorial, command by command, converges an AppService on a local cluster', { timeout: 600_000 }, async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-tutorial-'));
  const shims = join(work, '.shims');
  await mkdir(shims);
  await writeFile(
    join(shims, 'npx'),
    `#!/bin/sh\n[ "$1" = opkit ] || { echo "npx: only opkit is shimmed" >&2; exit 127; }\nshift\nexec "${process.execPath}" "${CLI}" "$@"\n`,
  );
  await writeFile(
    join(shims, 'npm'),
    `#!/bin/sh\ncase "$1" in\n  install) exec "${process.execPath}" "${LINK}" "$PWD" ;;\n  test) exec "${process.execPath}" --test --test-concurrency=1 "test/**/*.test.ts" ;;\n  *) echo "npm: only install and test are shimmed" >&2; exit 127 ;;\nesac\n`,
  );
  await chmod(join(shims, 'npx'), 0o755);
  await chmod(join(shims, 'npm'), 0o755);
  const childEnv = { ...process.env };
  delete childEnv.NODE_TEST_CONTEXT;
  delete childEnv.KUBECONFIG;
  env = {
    ...childEnv,
    PATH: `${shims}:${binaryCacheDir()}:${dirname(process.execPath)}:${process.env.PATH}`,
    OPKIT_STATE_DIR: join(work, '.state'),
  };
  let cwd = work;
  for (const step of steps(await readFile(join(ROOT, 'docs/tutorial.md'), 'utf8'))) {
    if (step.kind === 'file') {
      await mkdir(dirname(join(cwd, step.path as string)), { recursive: true });
      await writeFile(join(cwd, step.path as string), step.text);
      continue;
    }
    const cd = /^cd (\S+)$/.exec(step.text);
    if (cd) {
      cwd = join(cwd, cd[1] as string);
      continue;
    }
    if (step.text.endsWith('&')) {
      const log = await open(join(work, `background-${background.length}.log`), 'w');
      const p = spawn('sh', ['-c', step.text.slice(0, -1)], {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', log.fd, log.fd],
      });
      background.push(p);
      await new Promise((r) => setTimeout(r, 3_000)); // let it start
      continue;
    }
    const r = spawnSync('sh', ['-c', step.text], { cwd, env, encoding: 'utf8', timeout: 300_000 });
    assert.equal(r.status, 0, `"${step.text}" failed in ${cwd}:\n${r.stdout}${r.stderr}`);
    const exported = /^export KUBECONFIG=(.+)$/m.exec(r.stdout)?.[1];
    if (exported) env.KUBECONFIG = exported;
    if (step.text === 'kubectl get appservices') assert.match(r.stdout, /appservice-sample\s+3\s+3/);
    if (step.text.startsWith('kubectl get pods')) assert.equal(r.stdout.trim().split('\n').length, 4, r.stdout);
  }
  const tsc = spawnSync(
    join(ROOT, 'node_modules/.bin/tsc'),
    ['--noEmit', '-p', join(work, 'appservice-operator/tsconfig.json')],
    { encoding: 'utf8' },
  );
  assert.equal(tsc.status, 0, `the tutorial's code type-checks:\n${tsc.stdout}`);
});
