import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  checkVersion,
  commonVersion,
  contentProblems,
  dirtyTreeProblem,
  type Manifest,
  packageTable,
  packedCells,
  plannedPackages,
  publishedManifest,
  ReleaseError,
  readPackageTable,
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

test('the package table: the plan (release order, our dependencies, bins, exports) and what npm pack measured', () => {
  const order = releaseOrder([
    ws('create-opkit', { '@opkit/cli': '0.1.0' }, { bin: { 'create-opkit': './dist/main.js' } }),
    ws(
      '@opkit/cli',
      { '@opkit/runtime': '0.1.0', 'js-yaml': '^4' },
      {
        bin: { opkit: './dist/main.js' },
        exports: { '.': { '@opkit/source': './src/index.ts', default: './dist/index.js' }, './x': './dist/x.js' },
      },
    ),
    ws('@opkit/runtime', {}, { exports: { '.': './dist/index.js' } }),
  ]);
  const planned = plannedPackages(order, '0.2.0');
  assert.deepEqual(planned, [
    { id: '@opkit/runtime@0.2.0', dependsOn: [], bins: [], exports: ['.'] },
    { id: '@opkit/cli@0.2.0', dependsOn: ['@opkit/runtime'], bins: ['opkit'], exports: ['.', './x'] },
    { id: 'create-opkit@0.2.0', dependsOn: ['@opkit/cli'], bins: ['create-opkit'], exports: [] },
  ]);
  const measured = [
    packedCells({ files: 9, size: 2048, unpackedSize: 10_240 }),
    packedCells({ files: 96, size: 167_424, unpackedSize: 611_430 }),
    packedCells({ files: 9, size: 6758, unpackedSize: 20_480 }),
  ];
  const table = packageTable(
    planned.map((p, i) => ({ ...p, ...(measured[i] ?? { files: '', packed: '', unpacked: '' }) })),
  );
  assert.equal(
    table,
    [
      '| package                | depends on       | bin            | exports    | files |   packed | unpacked |',
      '| ---------------------- | ---------------- | -------------- | ---------- | ----: | -------: | -------: |',
      '| `@opkit/runtime@0.2.0` | —                | —              | `.`        |     9 |   2.0 kB |  10.0 kB |',
      '| `@opkit/cli@0.2.0`     | `@opkit/runtime` | `opkit`        | `.`, `./x` |    96 | 163.5 kB | 597.1 kB |',
      '| `create-opkit@0.2.0`   | `@opkit/cli`     | `create-opkit` | —          |     9 |   6.6 kB |  20.0 kB |',
    ].join('\n'),
  );
  assert.deepEqual(
    readPackageTable(table),
    new Map([
      ['@opkit/runtime@0.2.0', { files: '9', packed: '2.0 kB', unpacked: '10.0 kB' }],
      ['@opkit/cli@0.2.0', { files: '96', packed: '163.5 kB', unpacked: '597.1 kB' }],
      ['create-opkit@0.2.0', { files: '9', packed: '6.6 kB', unpacked: '20.0 kB' }],
    ]),
    'read back: the measured cells by package',
  );
});
