/**
 * The dependency direction of ../shared/STYLE.md, checked: which workspace may import which (tests may also use
 * @opkit/testenv and its test fixtures), no package imports another's internals, and relative imports stay inside their
 * package.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The one place a test may reach into another package: testenv's test fixtures (the release hosts' upstream layout and
 * a mirror server), which any workspace's tests may import as they may use @opkit/testenv. They are no package's public
 * entry, and no source file imports them.
 */
const TESTENV_FIXTURES = join(ROOT, 'packages/testenv/test/fixtures');

/** What each workspace may import of ours. */
const ALLOWED: Record<string, readonly string[]> = {
  'packages/testenv': [],
  'packages/runtime': [],
  'packages/cli': ['@opkit/runtime', '@opkit/testenv'],
  'packages/create-opkit': ['@opkit/cli'],
  'operators/appservice': ['@opkit/runtime', '@opkit/testenv'],
  bench: ['@opkit/runtime', '@opkit/testenv', '@opkit/appservice'],
};

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* tsFiles(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

const IMPORT = /(?:^|\s)(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The entries a workspace package declares public: `@opkit/cli` and `@opkit/cli/node-version` for its `exports` "." and "./node-version". */
async function publicEntries(pkg: string): Promise<string[]> {
  for (const workspace of Object.keys(ALLOWED)) {
    const manifest = JSON.parse(await readFile(join(ROOT, workspace, 'package.json'), 'utf8')) as {
      name: string;
      exports?: Record<string, unknown>;
    };
    if (manifest.name === pkg)
      return Object.keys(manifest.exports ?? { '.': '' }).map((key) => (key === '.' ? pkg : `${pkg}/${key.slice(2)}`));
  }
  return [pkg];
}

test('workspaces import only what the layering allows', async () => {
  const violations: string[] = [];
  for (const [workspace, allowed] of Object.entries(ALLOWED)) {
    const base = join(ROOT, workspace);
    for await (const file of tsFiles(base)) {
      // Lines of a doc comment (` * import …` in an `@example`) show a user's imports, not this file's.
      const text = (await readFile(file, 'utf8')).replace(/^\s*\*.*$/gm, '');
      const where = relative(ROOT, file);
      const isTest = where.includes('/test/') || where.endsWith('.test.ts');
      for (const m of text.matchAll(IMPORT)) {
        const spec = (m[1] ?? m[2]) as string;
        if (spec.startsWith('@opkit/')) {
          const pkg = spec.split('/').slice(0, 2).join('/');
          const ok = allowed.includes(pkg) || (isTest && pkg === '@opkit/testenv' && workspace !== 'packages/testenv');
          if (!ok) violations.push(`${where} imports ${spec}, not allowed for ${workspace}`);
          const entries = await publicEntries(pkg);
          if (!entries.includes(spec))
            violations.push(
              `${where} imports ${spec}: use one of the package's public entries (${entries.join(', ')})`,
            );
        } else if (spec.startsWith('.')) {
          const target = resolve(dirname(file), spec);
          const fixture = isTest && target.startsWith(`${TESTENV_FIXTURES}/`);
          if (!target.startsWith(`${base}/`) && !fixture)
            violations.push(`${where} reaches outside ${workspace} with ${spec}`);
        }
      }
    }
  }
  assert.deepEqual(violations, []);
});

/**
 * The runtime's own layers, lowest first: a module imports only from its own layer's directory or from lower layers.
 * The error classes are the base of all (the internal helpers throw `UsageError` too).
 * Tracing sits just above the base, because every request and reconcile opens its spans through it; so does tls
 * (serving certificates), which the webhook server and the metrics endpoint share. The helpers
 * (owner references, status, Events, finalizers, adoption, RBAC) sit between the cache and the
 * controller: they are the building blocks the object-first reconciler's context applies, and they know nothing of
 * controllers or managers. A fleet spreads its members over a sharded manager's replicas with sharding's ring, so
 * multicluster sits above sharding. `testing` and the entry point are on top.
 */
const RUNTIME_LAYERS: readonly (readonly string[])[] = [
  ['errors.ts'],
  ['logger.ts', 'version.ts', 'internal', 'prometheus.ts'],
  ['workqueue', 'quantity', 'prometheus-process.ts'],
  ['tracing', 'tls'],
  ['client'],
  ['metrics.ts', 'crd'],
  ['cache'],
  ['helpers', 'lease'],
  ['controller'],
  ['webhook', 'policy', 'sharding'],
  ['multicluster'],
  ['manager'],
  ['testing'],
  ['index.ts'],
];

test('inside the runtime: client below cache below helpers below controller below manager', async () => {
  const src = join(ROOT, 'packages/runtime/src');
  const unitOf = (file: string) => relative(src, file).split('/')[0] as string;
  const rank = (unit: string) => RUNTIME_LAYERS.findIndex((layer) => layer.includes(unit));
  const violations: string[] = [];
  for await (const file of tsFiles(src)) {
    if (file.endsWith('.test.ts')) continue;
    const from = unitOf(file);
    if (rank(from) < 0) violations.push(`${relative(ROOT, file)} is in no layer: add ${from} to RUNTIME_LAYERS`);
    for (const m of (await readFile(file, 'utf8')).matchAll(IMPORT)) {
      const spec = (m[1] ?? m[2]) as string;
      if (!spec.startsWith('.')) continue;
      const to = unitOf(resolve(dirname(file), spec));
      if (to === from) continue;
      if (rank(to) >= rank(from))
        violations.push(`${relative(ROOT, file)} (${from}) imports ${spec} (${to}): a layer imports only lower layers`);
    }
  }
  assert.deepEqual(violations, []);
});

test('the runtime exports each name from exactly one entry point, and the root stays small', async () => {
  const manifest = JSON.parse(await readFile(join(ROOT, 'packages/runtime/package.json'), 'utf8')) as {
    exports: Record<string, { '@opkit/source': string }>;
  };
  const seen = new Map<string, string>();
  const problems: string[] = [];
  let root = 0;
  for (const [entry, targets] of Object.entries(manifest.exports)) {
    const text = await readFile(join(ROOT, 'packages/runtime', targets['@opkit/source']), 'utf8');
    const names = [
      ...[...text.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
        (m[1] ?? '').split(',').map((n) => n.trim().replace(/^type /, '')),
      ),
      ...[...text.matchAll(/^export (?:declare )?(?:const|function|class|type|interface) (\w+)/gm)].map((m) => m[1]),
    ].filter((n): n is string => !!n);
    if (/^export \*/m.test(text)) problems.push(`${entry} re-exports with export *: list the names`);
    for (const name of names) {
      const before = seen.get(name);
      if (before !== undefined && before !== entry) problems.push(`${name} is exported from ${before} and ${entry}`);
      seen.set(name, entry);
    }
    if (entry === '.') root = names.length;
  }
  assert.deepEqual(problems, []);
  assert.ok(root <= 45, `@opkit/runtime exports ${root} names: keep the root to what operator authors use`);
});
