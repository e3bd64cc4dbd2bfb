import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkVersion,
  commonVersion,
  contentProblems,
  dirtyTreeProblem,
  type Manifest,
  publishedManifest,
  ReleaseError,
  releaseOrder,
  type Workspace,
} from './plan.ts';

const ws = (name: string, deps: Record<string, string> = {}, extra: Partial<Manifest> = {}): Workspace => ({
  dir: name,
  manifest: { name, version: '0.1.0', dependencies: deps, ...extra },
});

test('packages are published after the packages they depend on; private workspaces are not published', () => {
  const order = releaseOrder([
    ws('create-opkit', { '@opkit/cli': '0.1.0' }),
    ws('@opkit/cli', { '@opkit/runtime': '0.1.0', '@opkit/testenv': '0.1.0', 'js-yaml': '^4' }),
    ws('@opkit/appservice', { '@opkit/runtime': '0.1.0' }, { private: true }),
    ws('@opkit/runtime', { pino: '^10' }),
    ws('@opkit/testenv'),
  ]);
  assert.deepEqual(
    order.map((w) => w.manifest.name),
    ['@opkit/runtime', '@opkit/testenv', '@opkit/cli', 'create-opkit'],
  );
});

test('a dependency cycle is refused, naming it', () => {
  assert.throws(
    () => releaseOrder([ws('@opkit/a', { '@opkit/b': '0.1.0' }), ws('@opkit/b', { '@opkit/a': '0.1.0' })]),
    (e: unknown) =>
      e instanceof ReleaseError && e.code === 'CheckFailed' && /@opkit\/a → @opkit\/b → @opkit\/a/.test(e.message),
  );
});

test('one version: the packages must agree unless --version is given, and it must be a version', () => {
  assert.equal(commonVersion([ws('@opkit/a'), ws('@opkit/b')]), '0.1.0');
  assert.throws(
    () => commonVersion([ws('@opkit/a'), { dir: 'b', manifest: { name: '@opkit/b', version: '0.2.0' } }]),
    /different versions \(@opkit\/a@0\.1\.0, @opkit\/b@0\.2\.0\): pass --version X\.Y\.Z/,
  );
  assert.equal(checkVersion('1.2.3-rc.1'), '1.2.3-rc.1');
  assert.throws(() => checkVersion('v1.2'), /--version "v1\.2" is not a version/);
});

test('the published manifest has one version, exports only dist/, and no scripts or devDependencies', () => {
  const published = publishedManifest(
    {
      name: '@opkit/cli',
      version: '0.1.0',
      bin: { opkit: './dist/main.js' },
      exports: {
        '.': { '@opkit/source': './src/index.ts', types: './dist/index.d.ts', default: './dist/index.js' },
      },
      dependencies: { '@opkit/runtime': '0.1.0', 'js-yaml': '^4.3.2' },
      devDependencies: { '@opkit/testenv': '0.1.0' },
      scripts: { prepack: 'tsc -p tsconfig.build.json' },
    },
    '0.2.0',
    new Set(['@opkit/runtime', '@opkit/cli']),
  );
  assert.deepEqual(published, {
    name: '@opkit/cli',
    version: '0.2.0',
    bin: { opkit: './dist/main.js' },
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    dependencies: { '@opkit/runtime': '0.2.0', 'js-yaml': '^4.3.2' },
  });
});

test('a tarball must hold what its manifest points at, and nothing but package.json, README, LICENSE and dist/', () => {
  const manifest: Manifest = {
    name: '@opkit/cli',
    version: '0.1.0',
    bin: { opkit: './dist/main.js' },
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
  };
  assert.deepEqual(
    contentProblems(manifest, ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/main.js']),
    [],
  );
  assert.deepEqual(
    contentProblems(manifest, ['package.json', 'dist/index.js', 'dist/x.test.js', 'src/index.ts', 'dist/a.ts']),
    [
      'dist/index.d.ts (named in package.json) is not in the tarball',
      'dist/main.js (named in package.json) is not in the tarball',
      'dist/x.test.js should not ship (a test or a TypeScript source)',
      'src/index.ts should not ship (only package.json, README, LICENSE and dist/)',
      'dist/a.ts should not ship (a test or a TypeScript source)',
    ],
  );
});

test('a working tree with uncommitted changes is refused, naming the first one', () => {
  assert.equal(dirtyTreeProblem(''), undefined);
  assert.equal(
    dirtyTreeProblem(' M packages/cli/src/run.ts\n?? notes.txt\n'),
    'the working tree has 2 uncommitted change(s) (first: packages/cli/src/run.ts): commit or stash them, then release; nothing was published',
  );
});
