/**
 * The new user's journey, against a real registry: `npm run release` publishes every package to verdaccio on
 * loopback, then — in a temporary folder outside the repository, with only that registry configured and none of the
 * workspace's links or npm settings — `npm create opkit`, `npm install`, `opkit create api`, `opkit generate`,
 * `npm test` (on testenv), `npm test` again with Go hidden and an empty binary cache (every binary downloaded from the
 * upstream layout of dl.k8s.io, github.com and api.github.com, served on loopback: testenv's test/fixtures/mirror.ts),
 * `opkit run` converging the sample on a testenv cluster, the Dockerfile's steps in a copy of
 * the project, and a plain .mjs importing @opkit/runtime on Node 22 and Node 24. Then the bad inputs: releasing
 * the same version twice, a registry that does not answer, a project name that is already a folder, an old Node.
 * Side by side with those steps (every command runs without blocking the test process), docs/tutorial.md, then its
 * stateful chapter docs/stateful.md, each by one runner (`runPage`): every ```sh line in order through sh, once, and
 * every ```… file=… block written where it says, with the same registry, the real npm and npx, and a local cluster from
 * `npx opkit env up`.
 * Waits for the operator follow its progress (fixtures/phases.ts, or the page's own phased `kubectl wait`s), and a
 * wait that fails shows the state reached: the custom resource, the CRD, pods, events and the operator's log.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { after, before, describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  binaryCacheDir,
  type Environment,
  ETCD_VERSION,
  KUBERNETES_VERSION,
  KWOK_VERSION,
  readCacheManifest,
  start,
} from '@opkit/testenv';
import { componentsIn, serveMirror, upstreamMirror } from '../../testenv/test/fixtures/mirror.ts';
import { waitInPhases } from './fixtures/phases.ts';
import { type Registry, startRegistry } from './fixtures/registry.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const { version: VERSION, engines } = JSON.parse(await readFile(join(ROOT, 'packages/cli/package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};
const CLI_ENGINES = engines.node;

let registry: Registry | undefined;
let work = '';
let env: NodeJS.ProcessEnv = {};
const timings: string[] = [];

/** The environment of a user's shell: no npm settings, NODE_OPTIONS or PATH entries of this repository. */
function userEnv(npmrc: string): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(npm_|node_options$|node_test_context$|kubeconfig$|init_cwd$|opkit_state_dir$)/i.test(k),
    ),
  );
  const path = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((p) => p.length > 0 && !p.startsWith(ROOT.replace(/\/$/, '')) && !p.includes('node_modules'));
  return {
    ...clean,
    PATH: [dirname(process.execPath), ...path].join(delimiter),
    npm_config_userconfig: npmrc,
    // A fresh machine's npm cache: nothing from earlier runs (npx keeps the packages it ran there by name and version).
    npm_config_cache: join(work, '.npm-cache'),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  };
}

/** What a command printed and how it ended. */
interface ShResult {
  readonly status: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command without blocking the test, so the pages' runner goes on beside it (their timings too); ends it with
 * SIGTERM after `timeout` (300 s), and fails the test on a non-zero exit unless `ok` is false.
 */
async function sh(
  command: string,
  args: readonly string[],
  cwd: string,
  options: { env?: NodeJS.ProcessEnv; ok?: boolean; timeout?: number } = {},
): Promise<ShResult> {
  const t0 = performance.now();
  const child = spawn(command, args, { cwd, env: options.env ?? env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const timer = setTimeout(() => child.kill('SIGTERM'), options.timeout ?? 300_000);
  const r = await new Promise<ShResult>((resolve) => {
    child.once('error', (err) => resolve({ status: null, signal: null, stdout, stderr: `${stderr}${err.message}\n` }));
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  }).finally(() => clearTimeout(timer));
  const seconds = (performance.now() - t0) / 1000;
  timings.push(`${seconds.toFixed(1).padStart(6)} s  ${command} ${args.join(' ')}`);
  if (options.ok !== false)
    assert.equal(
      r.status,
      0,
      `${command} ${args.join(' ')} in ${cwd} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`,
    );
  return r;
}

const npm = (args: readonly string[], cwd: string, options?: Parameters<typeof sh>[3]) => sh('npm', args, cwd, options);

let released = '';
before(async () => {
  registry = await startRegistry();
  work = await mkdtemp(join(tmpdir(), 'opkit-journey-'));
  env = userEnv(registry.npmrc);
  // Both tests start from what `npm run release` published. --allow-dirty: the test runs on whatever the developer
  // has; CI's clone is clean anyway.
  released = (
    await npm(['run', 'release', '--', '--registry', registry.url, '--allow-dirty'], ROOT, {
      env: { ...process.env, npm_config_userconfig: registry.npmrc },
    })
  ).stdout;
  process.stdout.write(
    `# ${released
      .split('\n')
      .filter((l) => l.startsWith('  '))
      .join('\n# ')}\n`,
  );
});

/** SIGTERM to a process group that may be gone already (never throws: cleanup must go on). */
function killGroup(pid: number): void {
  try {
    process.kill(-pid, 'SIGTERM');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

/** Why `child` ended ("exited with code 1"), or undefined while it runs. */
function exitOf(child: ChildProcess): () => string | undefined {
  let ended: string | undefined;
  child.once('exit', (code, signal) => {
    ended = signal ? `it was ended by ${signal}` : `it exited with code ${code}`;
  });
  return () => ended;
}

/** The last `lines` lines of `text`. */
function tail(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** The longest one line of the tutorial may run (its longest bound, `--timeout=5m`, plus slack). */
const LINE_TIMEOUT_MS = 420_000;

/**
 * Runs one shell line without blocking the test (as `sh`, recording its time), and ends it early when `stopped`
 * names a reason (a wait for an operator that exited would otherwise sit out its whole timeout) or after
 * LINE_TIMEOUT_MS.
 */
function shWatched(
  line: string,
  cwd: string,
  shellEnv: NodeJS.ProcessEnv,
  stopped: () => string | undefined,
): Promise<{ status: number | null; stdout: string; stderr: string; stopped?: string }> {
  const t0 = performance.now();
  const p = spawn('sh', ['-c', line], { cwd, env: shellEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const started = Date.now();
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (c: Buffer) => (stdout += c));
  p.stderr.on('data', (c: Buffer) => (stderr += c));
  return new Promise((done) => {
    let why: string | undefined;
    const poll = setInterval(() => {
      why ??=
        stopped() ??
        (Date.now() - started > LINE_TIMEOUT_MS ? `still running after ${LINE_TIMEOUT_MS / 1000} s` : undefined);
      if (why !== undefined && p.pid) killGroup(p.pid);
    }, 500);
    p.once('close', (code) => {
      clearInterval(poll);
      timings.push(`${((performance.now() - t0) / 1000).toFixed(1).padStart(6)} s  ${line}`);
      done({ status: code, stdout, stderr, ...(why !== undefined ? { stopped: why } : {}) });
    });
  });
}

const background: ChildProcess[] = [];
let tutorialEnv: NodeJS.ProcessEnv | undefined;
after(async () => {
  for (const p of background) if (p.pid && p.exitCode === null) killGroup(p.pid);
  // a page that failed before its `npx opkit env down` leaves its cluster: both pages use the default one
  if (tutorialEnv)
    spawnSync('npx', ['opkit', 'env', 'down'], { cwd: join(work, 'appservice-operator'), env: tutorialEnv });
  await registry?.stop();
  if (work) await rm(work, { recursive: true, force: true });
  process.stdout.write(`# journey step times\n${timings.map((t) => `#   ${t}`).join('\n')}\n`);
});

/** The new user's steps, one subtest each, in order. */
async function newUser(t: TestContext): Promise<void> {
  const { url, npmrc } = registry as Registry;
  const demo = join(work, 'demo');

  await t.test('npm run release published every package', async () => {
    for (const name of ['@opkit/testenv', '@opkit/runtime', '@opkit/cli', 'create-opkit'])
      assert.match(released, new RegExp(`published ${name}@${VERSION}`));
  });

  await t.test('npm create opkit scaffolds a project that asks for the published version', async () => {
    await npm(['create', `opkit@${VERSION}`, 'demo', '--', '--domain', 'example.com'], work);
    const manifest = JSON.parse(await readFile(join(demo, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      engines: { node: string };
    };
    assert.equal(manifest.dependencies['@opkit/runtime'], `^${VERSION}`);
    assert.match(manifest.engines.node, /^>=\d+/);
  });

  await t.test('npm install takes every package from the registry, none from a workspace', async () => {
    await npm(['install'], demo);
    for (const name of ['@opkit/runtime', '@opkit/cli', '@opkit/testenv']) {
      const at = join(demo, 'node_modules', name);
      assert.equal((await stat(at)).isSymbolicLink(), false, `${name} is a real folder`);
      assert.deepEqual(
        // npm may nest a dependency of the package under its own node_modules: that is not shipped content
        (await readdir(at)).filter((f) => f !== 'node_modules').sort(),
        ['LICENSE', 'README.md', 'dist', 'package.json'],
        `${name} ships dist/, its README, LICENSE and package.json only`,
      );
    }
    assert.deepEqual(
      (await readdir(join(demo, 'node_modules/@opkit/testenv/dist/validation'))).sort(),
      ['k8s-validation.wasm.br', 'manifest.json', 'wasm_exec.js'],
      '@opkit/testenv ships the offline validator of @opkit/testenv/cel (users need no Go)',
    );
    const lock = await readFile(join(demo, 'package-lock.json'), 'utf8');
    assert.doesNotMatch(lock, new RegExp(ROOT.replace(/[/.]/g, '\\$&')), 'the lock names nothing of the repository');
  });

  await t.test('npx opkit create api, then npx opkit generate', async () => {
    await npm(
      [
        'exec',
        '--',
        'opkit',
        'create',
        'api',
        '--group',
        'app',
        '--version',
        'v1alpha1',
        '--kind',
        'AppService',
        '--controller',
      ],
      demo,
    );
    const r = await npm(['exec', '--', 'opkit', 'generate'], demo);
    assert.match(r.stdout, /up to date|wrote/);
  });

  await t.test('npm test runs the project’s test on testenv', async () => {
    const r = await npm(['test'], demo, { timeout: 600_000 });
    assert.match(r.stdout, /ℹ pass 1/);
  });

  await t.test('with Go hidden and an empty cache, npm test gets every binary from the upstream layout', async (t) => {
    if (process.getuid?.() !== 0) return t.skip('hiding /usr/local/go needs a private mount namespace (root)');
    const layout = await upstreamMirror(join(work, 'upstream'), componentsIn(binaryCacheDir()));
    const upstream = await serveMirror(join(work, 'upstream'), { githubRedirects: true });
    try {
      const empty = join(work, 'no-go');
      await mkdir(empty);
      const cache = join(work, 'cache-no-go');
      // No go on PATH, no OPKIT_GO or GOROOT, and /usr/local/go (findGo's last resort) an empty directory.
      const { OPKIT_GO: _go, GOROOT: _root, GOPATH: _path, ...rest } = env;
      const noGoEnv: NodeJS.ProcessEnv = {
        ...rest,
        PATH: (env.PATH ?? '')
          .split(delimiter)
          .filter((d) => !existsSync(join(d, 'go')))
          .join(delimiter),
        OPKIT_CACHE_DIR: cache,
        OPKIT_DOWNLOAD_MIRROR: upstream.base,
      };
      const hide = '[ ! -d /usr/local/go ] || mount --bind "$EMPTY" /usr/local/go || exit 96';
      const check = 'if command -v go || [ -e /usr/local/go/bin/go ]; then echo "go is still visible" >&2; exit 97; fi';
      const line = `unshare -m sh -c '${hide}; ${check}; exec npm test'`;
      const t0 = performance.now();
      const r = await shWatched(line, demo, { ...noGoEnv, EMPTY: empty }, () => undefined);
      const seconds = (performance.now() - t0) / 1000;
      assert.equal(r.status, 0, `${line} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout, /^(ℹ|#) pass 1$/m);
      const manifest = JSON.parse(
        await readFile(
          join(cache, 'bin', `k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}`, 'manifest.json'),
          'utf8',
        ),
      ) as {
        sources: Record<string, string>;
        sha256: Record<string, string>;
        goVersion?: string;
        buildSeconds: number;
      };
      assert.equal(manifest.goVersion, undefined, 'nothing was built from Go');
      assert.deepEqual(manifest.sha256, layout.sha256, 'every binary has the digest upstream published for it');
      for (const [component, source] of Object.entries(manifest.sources))
        assert.match(source, /^https:\/\/(dl\.k8s\.io|github\.com)\//, `${component} came from its release`);
      assert.equal(upstream.hits.get(layout.releaseAnswers.kwok), 1, "kwok's digest came from its GitHub release");
      assert.equal(upstream.hits.get(layout.releaseAnswers.etcd), 1, "etcd's SHA256SUMS was checked against it");
      assert.ok(
        upstream.requests.some((r) => r.path.startsWith('release-assets.githubusercontent.com/')),
        "GitHub's redirect",
      );
      assert.ok(
        !upstream.requests.some((r) => /kwok-linux-\w+\.sha256$/.test(r.path)),
        'no kwok checksum file is asked for',
      );
      const cold = await readCacheManifest();
      t.diagnostic(
        `first npm test with an empty cache and no Go, through the download path (loopback): ${seconds.toFixed(1)} s ` +
          `(downloads ${manifest.buildSeconds} s); the cold Go build of this machine's cache: ${cold?.buildSeconds ?? '?'} s`,
      );
      timings.push(`${String(manifest.buildSeconds).padStart(6)} s  ▸ of which downloading and verifying the binaries`);
    } finally {
      await upstream.close();
    }
  });

  await t.test('npx opkit run converges the sample on a testenv cluster', async () => {
    const cluster: Environment = await start({ nodes: 1, log: () => {} });
    const runLog = join(work, 'opkit-run.log');
    let operator: ChildProcess | undefined;
    try {
      const log = await open(runLog, 'w');
      operator = spawn(
        'npm',
        ['exec', '--', 'opkit', 'run', '--', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'],
        {
          cwd: demo,
          env: { ...env, KUBECONFIG: cluster.kubeconfigPath },
          stdio: ['ignore', log.fd, log.fd],
          detached: true,
        },
      );
      await log.close();
      const exited = exitOf(operator);
      // kubectl as the user would run it. Its own discovery cache: kubectl caches discovery per host:port for hours,
      // and a port an earlier test cluster used (one serving AppService v1 too) would map `appservice/…` to a
      // version this cluster lacks.
      const kubectlEnv = { ...env, KUBECONFIG: cluster.kubeconfigPath, KUBECACHEDIR: join(work, 'kube-cache') };
      const kubectl = (args: readonly string[]) =>
        sh(join(binaryCacheDir(), 'kubectl'), args, demo, { env: kubectlEnv });
      const crd = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/appservices.app.example.com';
      const sample = '/apis/app.example.com/v1alpha1/namespaces/default/appservices/appservice-sample';
      type Conditions = { status?: { conditions?: { type: string; status: string }[] } };
      const conditionTrue = (o: Conditions | undefined, type: string) =>
        o?.status?.conditions?.some((c) => c.type === type && c.status === 'True') === true;
      const get = async <T>(path: string) => {
        const r = await cluster.api.request<T>({ path }).catch(() => undefined);
        return r?.status === 200 ? r.body : undefined;
      };
      const logText = () => readFile(runLog, 'utf8').catch(() => '');
      // Each phase has its own bound and is extended while the operator's log or the sample changes; a failure says
      // which phase was not reached, and shows the sample, the CRD and the operator's log.
      const watch = {
        progress: async () => {
          const o = await get<{ metadata: { resourceVersion: string } }>(sample);
          return `${(await logText()).length}/${o?.metadata.resourceVersion ?? '-'}`;
        },
        stopped: () => exited(),
        diagnose: async () =>
          [
            `the CRD's conditions: ${JSON.stringify((await get<Conditions>(crd))?.status?.conditions ?? 'no CRD')}`,
            `the sample: ${JSON.stringify((await get<unknown>(sample)) ?? 'not found')}`,
            `opkit run's log (last 40 lines):\n${tail(await logText(), 40)}`,
          ].join('\n'),
        quietMs: 120_000,
        maxMs: 480_000,
        onReached: (phase: string, seconds: number) => timings.push(`${seconds.toFixed(1).padStart(6)} s  ▸ ${phase}`),
      };
      await waitInPhases(
        [
          { name: 'opkit run applied the CRD', reached: async () => /opkit: applied \d+ CRD/.test(await logText()) },
          {
            name: 'the CRD is Established',
            reached: async () => conditionTrue(await get<Conditions>(crd), 'Established'),
          },
        ],
        watch,
      );
      await kubectl(['apply', '-n', 'default', '-f', 'config/samples/app_v1alpha1_appservice.yaml']);
      await waitInPhases(
        [
          { name: 'the operator started its workers', reached: async () => /starting workers/.test(await logText()) },
          { name: 'the sample is Ready', reached: async () => conditionTrue(await get<Conditions>(sample), 'Ready') },
        ],
        watch,
      );
      assert.match(
        (await kubectl(['get', 'appservice', '-n', 'default', 'appservice-sample'])).stdout,
        /appservice-sample\s+True/,
      );
    } finally {
      if (operator?.pid && operator.exitCode === null && operator.signalCode === null) {
        const gone = new Promise((r) => operator?.once('exit', r));
        killGroup(operator.pid);
        await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      }
      await cluster.stop();
    }
  });

  await t.test('the Dockerfile’s steps work in a copy of the project', async () => {
    await dockerfileSteps(demo, join(work, 'image'));
  });

  await t.test('on Node 24 and on Node 22: a plain .mjs imports @opkit/runtime', async () => {
    await writeFile(
      join(demo, 'check.mjs'),
      "import { Manager } from '@opkit/runtime';\nconsole.log(typeof Manager, process.version);\n",
    );
    const on24 = await sh(process.execPath, ['check.mjs'], demo);
    assert.match(on24.stdout, /^function v24\./);
    const node22 = join(work, 'node22');
    await mkdir(node22);
    await writeFile(join(node22, 'package.json'), '{"private":true}\n');
    await npm(['install', '--no-save', 'node@22'], node22);
    const on22 = await sh(join(node22, 'node_modules/.bin/node'), ['check.mjs'], demo);
    assert.match(on22.stdout, /^function v22\./);
  });

  await t.test('on Node 22: npx opkit generate --check and npm test (the CLI, runtime and testenv)', async () => {
    const env22 = { ...env, PATH: [join(work, 'node22/node_modules/.bin'), env.PATH ?? ''].join(delimiter) };
    assert.match((await sh('node', ['--version'], demo, { env: env22 })).stdout, /^v22\./);
    await npm(['exec', '--', 'opkit', 'generate', '--check'], demo, { env: env22 });
    const r = await npm(['test'], demo, { env: env22, timeout: 600_000 });
    assert.match(r.stdout, /^(ℹ|#) pass 1$/m);
  });

  await t.test('releasing the same version again is refused in one line, and publishes nothing', async () => {
    const before = (await npm(['view', '@opkit/runtime', 'time', '--json'], work)).stdout;
    const r = await npm(['run', '--silent', 'release', '--', '--registry', url, '--allow-dirty'], ROOT, {
      env: { ...process.env, npm_config_userconfig: npmrc },
      ok: false,
    });
    assert.equal(r.status, 1);
    assert.match(
      r.stderr.trim(),
      /^release: .*already published on .*: nothing was published; release a new version with --version X\.Y\.Z$/,
    );
    assert.equal((await npm(['view', '@opkit/runtime', 'time', '--json'], work)).stdout, before);
  });

  await t.test('a registry that does not answer is named in one line', async () => {
    const r = await npm(
      ['run', '--silent', 'release', '--', '--registry', 'http://127.0.0.1:9/', '--allow-dirty'],
      ROOT,
      {
        env: { ...process.env, npm_config_userconfig: npmrc },
        ok: false,
      },
    );
    assert.equal(r.status, 1);
    assert.equal(
      r.stderr.trim(),
      'release: the registry http://127.0.0.1:9/ does not answer (ECONNREFUSED): start it or correct --registry; nothing was published',
    );
  });

  await t.test('npm create opkit into a folder that exists is refused in one line, and changes nothing', async () => {
    const listing = async () => JSON.stringify(await readdir(demo, { recursive: true }));
    const beforeFiles = await listing();
    const main = await readFile(join(demo, 'src/main.ts'), 'utf8');
    const r = await npm(['create', `opkit@${VERSION}`, 'demo', '--', '--domain', 'example.com'], work, { ok: false });
    assert.notEqual(r.status, 0);
    assert.match(
      r.stderr,
      /^create-opkit: .*demo already exists: choose another name, or move it away first \(nothing was written\)$/m,
    );
    assert.equal(await listing(), beforeFiles);
    assert.equal(await readFile(join(demo, 'src/main.ts'), 'utf8'), main);
  });

  await t.test('npx @opkit/cli init works too', async () => {
    await sh('npx', ['--yes', `@opkit/cli@${VERSION}`, 'init', 'other-operator', '--domain', 'example.com'], work);
    assert.match(await readFile(join(work, 'other-operator/PROJECT'), 'utf8'), /projectName: other-operator/);
  });

  await t.test('a Node older than supported gets one line from the CLI and from npm test', async (t) => {
    const old = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => {
      const v = spawnSync(p, ['--version'], { encoding: 'utf8' }).stdout?.trim() ?? '';
      return /^v(1\d|2[01])\./.test(v);
    });
    if (!old) return t.skip('no Node older than 22 on this machine');
    const version = spawnSync(old, ['--version'], { encoding: 'utf8' }).stdout.trim();
    const minimum = /^>=(\d+)\.(\d+)$/.exec(CLI_ENGINES) as RegExpExecArray;
    const line = `opkit needs Node ≥ ${minimum[1]}.${minimum[2]} (this is ${version}): install Node ${minimum[1]} LTS or newer`;
    const cli = await sh(old, [join(demo, 'node_modules/.bin/opkit'), 'generate'], demo, { ok: false });
    assert.equal(cli.status, 1);
    assert.equal(cli.stderr.trim(), line);
    const oldEnv = { ...env, PATH: [dirname(old), ...(env.PATH ?? '').split(delimiter)].join(delimiter) };
    const tests = await npm(['test'], demo, { env: oldEnv, ok: false });
    assert.notEqual(tests.status, 0);
    assert.match(tests.stdout + tests.stderr, new RegExp(`^${line.replace(/[.()≥]/g, '\\$&')}$`, 'm'));
  });
}

interface Step {
  kind: 'sh' | 'file';
  text: string;
  path?: string;
}

/** The ```sh lines (one command each) and the ```ts file=… blocks of a page, in order. */
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

/** The environment every page runs in: the user's, with the registry, the binary cache on PATH and a state dir. */
function pageEnv(): NodeJS.ProcessEnv {
  tutorialEnv ??= {
    ...env,
    PATH: [dirname(process.execPath), binaryCacheDir(), env.PATH ?? ''].join(delimiter),
    OPKIT_STATE_DIR: join(work, '.tutorial-state'),
    // a fresh machine's kubectl discovery cache (as in the test above: a stale one maps kinds to another cluster's)
    KUBECACHEDIR: join(work, 'kube-cache-tutorial'),
    // The operator's /metrics and /healthz off: their default ports (:8443, :8081) may be taken on a shared machine
    // (another operator, another run of this test), and the page needs neither. Its commands are unchanged.
    METRICS_BIND_ADDRESS: '0',
    HEALTH_PROBE_BIND_ADDRESS: '0',
  };
  return tutorialEnv;
}

/** What a page needs besides its text: kubectl reads for a failed step, and checks of some lines' output. */
interface PageChecks {
  /** `kubectl …` argument lines whose output a failed step shows (besides pods and events). */
  readonly diagnose: readonly string[];
  /** Called with each foreground line and its output. */
  readonly check?: (line: string, stdout: string) => void;
}

/**
 * Runs a page of docs/ as a user would, from `work`: every ```sh line in order through sh, once (`cd` moves, a line
 * ending in `&` runs in the background until the page ends, `export KUBECONFIG=…` printed by a line is exported), and
 * every ```… file=PATH block written at PATH. A failed line throws with what the cluster and the background commands
 * show.
 */
async function runPage(page: string, checks: PageChecks): Promise<void> {
  const tEnv = pageEnv();
  let cwd = work;
  const backgroundLogs: { line: string; path: string; exited: () => string | undefined }[] = [];
  const mine: ChildProcess[] = [];
  /** Why a background command of the page (`npx opkit run &`) ended, while the page expects it to run. */
  const stopped = () => {
    for (const b of backgroundLogs) {
      const why = b.exited();
      if (why !== undefined) return `"${b.line}" ended: ${why}`;
    }
    return undefined;
  };
  /** What the cluster and the background commands show, for a step that failed. */
  const diagnose = async () => {
    const parts: string[] = [];
    if (tEnv.KUBECONFIG) {
      for (const args of [...checks.diagnose, 'get pods -A -o wide', 'get events -A --sort-by=.lastTimestamp']) {
        const r = spawnSync('kubectl', args.split(' '), { cwd, env: tEnv, encoding: 'utf8', timeout: 30_000 });
        parts.push(`$ kubectl ${args}\n${tail(`${r.stdout ?? ''}${r.stderr ?? ''}`, 60)}`);
      }
    }
    for (const b of backgroundLogs)
      parts.push(
        `$ ${b.line} (${b.exited() ?? 'running'}), last 40 lines:\n${tail(await readFile(b.path, 'utf8'), 40)}`,
      );
    return parts.join('\n');
  };
  try {
    for (const step of steps(await readFile(join(ROOT, page), 'utf8'))) {
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
      // `kill %N && wait`, as a user types it in the shell that started job N: SIGTERM to that job, then its end
      const job = /^kill %(\d+) && wait$/.exec(step.text);
      if (job) {
        const b = mine[Number(job[1]) - 1];
        assert.ok(b?.pid, `${page}: "${step.text}" names no background job of the page`);
        if (b.exitCode === null && b.signalCode === null) {
          const ended = new Promise((resolve) => b.once('exit', resolve));
          killGroup(b.pid);
          await Promise.race([
            ended,
            sleep(60_000).then(() => assert.fail(`${page}: job ${job[1]} still runs 60 s after SIGTERM`)),
          ]);
        }
        continue;
      }
      if (step.text.endsWith('&')) {
        const path = join(work, `page-background-${background.length}.log`);
        const log = await open(path, 'w');
        const child = spawn('sh', ['-c', step.text.slice(0, -1)], {
          cwd,
          env: tEnv,
          detached: true,
          stdio: ['ignore', log.fd, log.fd],
        });
        background.push(child);
        mine.push(child);
        backgroundLogs.push({ line: step.text, path, exited: exitOf(child) });
        await log.close();
        continue;
      }
      // Every line as the page has it, once: a command that needs what a background one sets up (the CRD that
      // `opkit run` installs, the operator's first status) must be preceded on the page by a wait for it, as a user
      // typing quickly needs it too. While a line runs, a background command that ends fails the step at once.
      const r = await shWatched(step.text, cwd, tEnv, step.text.startsWith('kubectl ') ? stopped : () => undefined);
      if (r.status !== 0) {
        throw new Error(
          `${page}'s "${step.text}" failed (${r.stopped ?? `exit ${r.status}`}):\n${r.stdout}${r.stderr}\n${await diagnose()}`,
        );
      }
      const exported = /^export KUBECONFIG=(.+)$/m.exec(r.stdout)?.[1];
      if (exported) tEnv.KUBECONFIG = exported;
      checks.check?.(step.text, r.stdout);
    }
  } finally {
    // the page's background commands end with it (the next page starts its own)
    for (const p of mine) if (p.pid && p.exitCode === null) killGroup(p.pid);
  }
}

/** The tutorial's page, then its stateful chapter, each as `runPage` runs it. */
async function docsPages(t: TestContext): Promise<void> {
  await t.test('docs/tutorial.md, command by command, against the registry and a local cluster', async () => {
    await runPage('docs/tutorial.md', {
      diagnose: ['get crd appservices.app.example.com -o jsonpath={.status.conditions}', 'get appservices -A -o yaml'],
      check: (line, stdout) => {
        if (line === 'kubectl get appservices') assert.match(stdout, /appservice-sample\s+3\s+3/);
        if (line.startsWith('kubectl get pods')) assert.equal(stdout.trim().split('\n').length, 4, stdout);
      },
    });
  });
  await t.test('docs/stateful.md, after the tutorial, with the same runner', async () => {
    await runPage('docs/stateful.md', {
      diagnose: ['get kvstores,kvsnapshots -A -o yaml', 'get statefulsets,pvc,pv,jobs -A -o wide'],
      check: (line, stdout) => {
        if (line === 'kubectl get pvc') {
          const bound = stdout.split('\n').filter((l) => /^data-kvstore-sample-\d\s+Bound\s/.test(l));
          assert.equal(bound.length, 2, stdout);
        }
      },
    });
  });
}

// The new user and the pages share the registry and nothing else (each its own folder, cluster, state directory and
// ports): side by side, as two users on one machine would be.
describe('the journey: a new user and the docs pages, side by side', { concurrency: 2 }, () => {
  test('a new user, from an empty folder, against a registry on loopback', { timeout: 1_500_000 }, newUser);
  test('the docs pages, as a user types them', { timeout: 1_500_000 }, docsPages);
});

/**
 * Runs a Dockerfile's build steps without a container engine: each stage gets a folder standing for its WORKDIR
 * (`/app` in the file is replaced by it), COPY copies from the build context (minus .dockerignore) or from an
 * earlier stage, ENV and RUN run there, and the ENTRYPOINT is started with --help.
 */
async function dockerfileSteps(context: string, into: string): Promise<void> {
  const dockerfile = await readFile(join(context, 'Dockerfile'), 'utf8');
  const ignored = (await readFile(join(context, '.dockerignore'), 'utf8'))
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));
  const isIgnored = (path: string) =>
    ignored.some((p) => path === p || path.startsWith(`${p}/`) || (p.startsWith('**/*') && path.endsWith(p.slice(4))));
  const stages = new Map<string, string>();
  let dir = '';
  let workdir = '/';
  let stageEnv: NodeJS.ProcessEnv = { ...env };
  let entrypoint: string[] = [];
  // Paths under any WORKDIR of the file (e.g. /app in ENV and RUN) stand for the current stage's folder.
  const workdirs = [...dockerfile.matchAll(/^WORKDIR\s+(\S+)/gm)].map((m) => m[1] as string);
  const local = (text: string) => workdirs.reduce((t, w) => t.replaceAll(w, dir), text);
  for (const raw of dockerfile.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [instruction = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    switch (instruction.toUpperCase()) {
      case 'FROM': {
        dir = join(into, `stage-${stages.size}`);
        await mkdir(dir, { recursive: true });
        const name = /\sAS\s+(\S+)/i.exec(line)?.[1];
        stages.set(name ?? `#${stages.size}`, dir);
        stageEnv = { ...env };
        workdir = '/';
        break;
      }
      case 'WORKDIR':
        workdir = args;
        break;
      case 'ENV':
        for (const m of args.matchAll(/(\w+)=(\S+)/g)) stageEnv[m[1] as string] = local(m[2] as string);
        break;
      case 'COPY': {
        const from = /--from=(\S+)/.exec(args)?.[1];
        const parts = args.replace(/--from=\S+\s*/, '').split(/\s+/);
        const target = parts.pop() as string;
        for (const source of parts) {
          const src = from ? join(stages.get(from) as string, relative(workdir, source)) : join(context, source);
          if (!from && isIgnored(source)) continue;
          const dest = target.endsWith('/') ? join(dir, target, source.split('/').pop() as string) : join(dir, target);
          await cp(src, dest, {
            recursive: true,
            filter: (s) => from !== undefined || !isIgnored(relative(context, s)),
          });
        }
        break;
      }
      case 'RUN':
        await sh('sh', ['-c', local(args)], dir, { env: stageEnv, timeout: 600_000 });
        break;
      case 'ENTRYPOINT':
        entrypoint = JSON.parse(args) as string[];
        break;
      default:
        break; // ARG, USER, EXPOSE: nothing to run
    }
  }
  const [command = '', ...rest] = entrypoint;
  const r = await sh(command, [...rest, '--help'], dir, { env: stageEnv });
  assert.match(r.stdout, /^Usage: demo /);
  await writeFile(join(into, 'done'), 'ok');
}
