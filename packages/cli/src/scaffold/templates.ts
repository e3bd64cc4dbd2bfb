/**
 * @module scaffold/templates
 * The files `opkit init` and `opkit create api` write. Scaffolded files are the user's from then on (their first
 * line says so); generated ones are rewritten by `opkit generate`. Templates are plain functions of the project, so
 * golden tests pin their output.
 */
import yaml from 'js-yaml';
import { CliError } from '../errors.ts';
import { ownManifest } from '../manifest.ts';
import { camel, kindsName, lower } from '../project/names.ts';
import { type ApiEntry, apiGroup, type Project } from '../project/project.ts';
import { TRACING_DEPENDENCIES, tracingFile } from './tracing.ts';

export const YOURS = '// scaffolded by opkit — this file is yours to edit';
const YOURS_YAML = '# scaffolded by opkit — this file is yours to edit';
export const MARK_IMPORTS = '// +opkit:scaffold:imports';
export const MARK_CONTROLLERS = '// +opkit:scaffold:controllers';

/** The range a new project asks for: this CLI's own release and what is compatible with it. */
export const OPKIT_VERSION = `^${ownManifest().version}`;

/**
 * A one-line `node -e` check that the running Node is at least the `>=X.Y` of `engines`, printing one line naming the
 * project and the version needed otherwise.
 */
export function nodeCheckScript(project: string, engines: string): string {
  const [major = 22, minor = 0] = (/>=\s*(\d+)(?:\.(\d+))?/.exec(engines) ?? [])
    .slice(1)
    .map((x) => (x === undefined ? undefined : Number(x)))
    .filter((x): x is number => x !== undefined);
  return (
    `node -e "const [a,b]=process.versions.node.split('.').map(Number);` +
    `if(a<${major}||(a===${major}&&b<${minor})){console.error('${project} needs Node >= ${major}.${minor} ` +
    `(this is '+process.version+'): install Node ${major} LTS or newer');process.exit(1)}"`
  );
}

/** The files `opkit init` writes, by path. */
export function initFiles(p: Project): Map<string, string> {
  return new Map([
    ['package.json', packageJsonFile(p)],
    ['tsconfig.json', tsconfigFile()],
    ['src/main.ts', mainFile(p)],
    ['src/tracing.ts', tracingFile()],
    ['Dockerfile', dockerfile()],
    ['.dockerignore', `${YOURS_YAML}\nnode_modules\ntest\n**/*.test.ts\n.git\n`],
    ['.gitignore', `${YOURS_YAML}\nnode_modules/\ndist/operator/\ndist/.operator-*/\n`],
    ['README.md', readmeFile(p)],
    ['test/setup.ts', testSetupFile()],
  ]);
}

/** test/setup.ts: the global setup of \`npm test\`: one control plane for every test file of the run. */
function testSetupFile(): string {
  return `${YOURS}
// The global setup of \`npm test\` (\`opkit test\`; on Node 24 also node --test --test-global-setup=test/setup.ts): one
// local control plane for the whole run, started before the first test file and stopped after the last. Each file
// attaches to it with sharedEnvironment(); a file run alone (node --test test/x.test.ts) starts one of its own. The
// files share the cluster, so give each test's objects names (or namespaces) of their own. Its progress lines go to
// stderr: the first run on a machine downloads (or builds) the control-plane binaries, and says so.
// The project's CRDs (opkit generate writes them to config/crd/bases, and npm test's pretest checks they are current)
// are installed as it starts: the apiserver holds the first create of a new kind for about 2 s, by then passed.
import { existsSync } from 'node:fs';
import { shareEnvironment } from '@opkit/testenv';

const crds = new URL('../config/crd/bases/', import.meta.url); // none until the first \`opkit create api\`
export const { globalSetup, globalTeardown } = shareEnvironment({ nodes: 1, crds: existsSync(crds) ? [crds] : [] });
`;
}

/** package.json: the npm manifest: scripts, and the dependencies on this release of opkit. */
function packageJsonFile(p: Project): string {
  return `${JSON.stringify(
    {
      name: p.projectName,
      version: '0.1.0',
      private: true,
      description: `${p.projectName}: a Kubernetes operator built with opkit`,
      type: 'module',
      engines: { node: ownManifest().engines.node },
      scripts: {
        // no dependency: `npm start` also runs where only production dependencies are installed
        prestart: nodeCheckScript(p.projectName, ownManifest().engines.node),
        start: 'node src/main.ts',
        generate: 'opkit generate',
        // an old Node (opkit refuses it in one line first), stale CRDs, RBAC or manifests, or a sample the API
        // refuses fail npm test before any test runs, naming the fix
        pretest: 'opkit generate --check',
        test: 'opkit test',
        // the operator under faults (crashes between writes, stale views, pauses): docs/chaos.md
        chaos: 'opkit chaos',
        typecheck: 'tsc --noEmit -p tsconfig.json',
      },
      dependencies: { '@opkit/runtime': OPKIT_VERSION, '@sinclair/typebox': '^0.34.52', ...TRACING_DEPENDENCIES },
      devDependencies: {
        '@opkit/cli': OPKIT_VERSION,
        '@opkit/testenv': OPKIT_VERSION,
        '@types/node': '^24.19.4',
        typescript: '^5.9.3',
      },
    },
    null,
    2,
  )}\n`;
}

/** tsconfig.json: strict TypeScript that Node runs by type stripping (no build step). */
function tsconfigFile(): string {
  return `${JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2024',
        lib: ['ES2024'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noImplicitOverride: true,
        isolatedModules: true,
        verbatimModuleSyntax: true,
        erasableSyntaxOnly: true,
        allowImportingTsExtensions: true,
        noEmit: true,
        skipLibCheck: true,
      },
      include: ['src', 'test'],
    },
    null,
    2,
  )}\n`;
}

/** src/main.ts: the operator process, with the markers `opkit create` inserts at. */
function mainFile(p: Project): string {
  return `#!/usr/bin/env node
${YOURS}
/**
 * The ${p.projectName} operator process: a Manager (caches, controllers, leader election, /metrics, /healthz,
 * /readyz) configured from flags and environment (run with --help), and the controllers \`opkit create api\` added.
 */
import { Manager, settings } from '@opkit/runtime';
import { startTracing, TRACING_FLAGS } from './tracing.ts';
${MARK_IMPORTS}

export const OPERATOR_NAME = '${p.projectName}';

// --help lists the manager's flags and yours; declare your own here, typed, e.g.
// resyncPeriod: { type: 'duration', env: 'RESYNC_PERIOD', help: 'reconcile everything this often' }
const { manager, flags } = settings({ name: OPERATOR_NAME, flags: { ...TRACING_FLAGS } });
try {
  const tracing = await startTracing(OPERATOR_NAME, flags.tracing); // off unless --tracing
  const mgr = await Manager.create({
    ...manager,
    controllers: { ...manager.controllers, traceContextFromAnnotations: tracing !== undefined },
  });
  if (tracing) mgr.onStopped(tracing); // exports the last spans once the manager has stopped
  ${MARK_CONTROLLERS}
  await mgr.run();
} catch (err) {
  process.stderr.write(\`\${OPERATOR_NAME}: \${(err as Error).message.split('\\n')[0]}\\n\`);
  process.exit(1);
}
`;
}

/** Dockerfile: the image: the operator bundled into one program, production dependencies only, non-root. */
function dockerfile(): string {
  return `# syntax=docker/dockerfile:1
${YOURS_YAML}
# The image runs your operator bundled into one JavaScript program (\`opkit build --js\`, in the build stage): a
# fraction of the memory and start-up time of loading each of its modules. The packages it loads only on demand
# (tracing, certificates) come from the production dependencies. Non-root, with a warm Node compile cache.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM \${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY src ./src
RUN npx opkit build --js

FROM \${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM \${NODE_IMAGE}
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/.node-compile-cache
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist/operator ./dist/operator
RUN node dist/operator/main.mjs --help > /dev/null && chmod -R a+rX /app/.node-compile-cache
USER 65532:65532
EXPOSE 8443 8081
ENTRYPOINT ["node", "dist/operator/main.mjs"]
`;
}

/** README.md: how to develop, test and deploy the operator. */
function readmeFile(p: Project): string {
  return `# ${p.projectName}

A Kubernetes operator built with [opkit](https://www.npmjs.com/package/@opkit/cli).

    npm install
    npx opkit create api --group app --version v1alpha1 --kind MyKind --controller   # add an API
    npx opkit generate      # CRDs, RBAC and manifests under config/, dist/install.yaml
    npx opkit env up        # a local cluster (prints export KUBECONFIG=…)
    npx opkit run           # install the CRDs and run the operator against the current kubeconfig
    npm test                # generate --check (stale files, samples), then the tests on a real local control plane
    npm run chaos           # the operator under faults: crashes between writes, stale views, pauses (5 minutes)
    npx opkit build --image registry.example.com/${p.projectName}:0.1.0 && npx opkit deploy --image …

Layout: \`src/api/<version>/\` (your API types: TypeBox schemas), \`src/controllers/\` (reconcilers and the permissions
they need), \`src/main.ts\`, \`config/\` (generated, except \`config/samples/\`), \`PROJECT\` (what was scaffolded).
`;
}

export function apiFile(p: Project, api: ApiEntry): string {
  return `${YOURS}
/**
 * The ${api.kind} API (\`${apiGroup(p, api)}/${api.version}\`). This TypeBox schema is the single source of the
 * CustomResourceDefinition (\`opkit generate\`) and of the TypeScript types. Add your fields; validation keywords
 * (minimum, pattern, maxLength, …) and CEL rules (\`'x-kubernetes-validations'\`) are enforced by the apiserver. A
 * field of a built-in type (a pod template, a container's resources) takes Kubernetes' own schema from
 * \`@opkit/runtime/schemas/<group>\` (\`PodTemplateSpecSchema\`, \`ResourceRequirementsSchema\`), and the apiserver
 * validates it as it validates a Pod's.
 */
import { Defaulted, defineKind, type ObjectOf } from '@opkit/runtime';
import { ConditionsSchema } from '@opkit/runtime/crd';
import { type Static, Type } from '@sinclair/typebox';

export const ${api.kind}Spec = Type.Object(
  {
    // Example field — replace with yours. Defaulted: the apiserver fills it in, so a create may leave it out.
    replicas: Defaulted(Type.Integer({ minimum: 0, format: 'int32', description: 'How many to run.' }), 1),
  },
  { description: 'The desired state of a ${api.kind}.' },
);

export const ${api.kind}Status = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ format: 'int64' })),
    // metav1.Condition's shape and validation, a list keyed by type; setCondition() reads and writes it as it is.
    conditions: Type.Optional(ConditionsSchema),
  },
  { description: 'The observed state of a ${api.kind}.' },
);

export const ${kindsName(api.kind)} = defineKind({
  group: '${apiGroup(p, api)}',
  version: '${api.version}',
  kind: '${api.kind}',
  plural: '${api.plural}',
  scope: '${api.namespaced ? 'Namespaced' : 'Cluster'}',
  spec: ${api.kind}Spec,
  status: ${api.kind}Status,
  subresources: { status: true },
  printerColumns: [{ name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' }],
});

export type ${api.kind}Spec = Static<typeof ${api.kind}Spec>;
export type ${api.kind}Status = Static<typeof ${api.kind}Status>;
export type ${api.kind} = ObjectOf<typeof ${kindsName(api.kind)}>;
`;
}

export function controllerFile(_project: Project, api: ApiEntry): string {
  const k = api.kind;
  return `${YOURS}
/**
 * The ${k} controller. Level-triggered: the reconciler gets an object whose state may need work (never the event
 * that woke it) and drives the world toward its spec. Every write goes through \`ctx\`, which does the bookkeeping:
 * \`ctx.create\`, \`ctx.apply\`, \`ctx.update\`, \`ctx.patch\` and \`ctx.delete\` set (or keep) owner references and
 * record expectations, \`ctx.status\` writes only on change, \`ctx.events\` records Events. Reads say where they come
 * from: \`ctx.cache\` and \`ctx.owned\` (the cache), \`ctx.apiReader\` (the API server). Declare in \`permissions\`
 * everything it does with the API: \`opkit generate\` turns exactly that into the operator's RBAC, and the test runs
 * the controller under it.
 */
import { done, type Manager, type ObjectContext, type Permission, permission, setCondition } from '@opkit/runtime';
import { type ${k}, ${kindsName(k)} } from '../api/${api.version}/${lower(k)}.ts';

export const permissions: readonly Permission[] = [
  permission(${kindsName(k)}, ['list', 'watch']),
  permission(${kindsName(k)}, ['patch', 'update'], { subresource: 'status' }),
];

export async function reconcile${k}(obj: ${k}, ctx: ObjectContext<${k}>) {
  // Your logic goes here: make the world match obj.spec. For a child, e.g. \`await ctx.create(ConfigMaps, { … })\`
  // (ConfigMaps from '@opkit/runtime/kinds'): add its kind to permissions and \`.owns(ConfigMaps)\` below.
  const observedGeneration = obj.metadata.generation ?? 0;
  const { conditions } = setCondition(obj.status?.conditions, {
    type: 'Ready',
    status: 'True',
    reason: 'Reconciled',
    message: 'the spec is applied',
    observedGeneration,
  });
  await ctx.status({ ...obj.status, observedGeneration, conditions });
  return done();
}

export function setup${k}Controller(mgr: Manager): void {
  mgr.controller(${kindsName(k)}).named('${camel(k).toLowerCase()}').reconcile(reconcile${k});
}
`;
}

export function controllerTestFile(p: Project, api: ApiEntry): string {
  const k = api.kind;
  const ns = api.namespaced ? "namespace: 'default', " : '';
  return `${YOURS}
// The ${k} controller on a real local control plane (@opkit/testenv, one for the run's test files), running
// as the operator's ServiceAccount with the RBAC generated from \`permissions\`: a permission missing there fails this
// test with the 403 named.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { getCondition } from '@opkit/runtime';
import { startTestManager } from '@opkit/runtime/testing';
import { type SharedEnvironment, sharedEnvironment } from '@opkit/testenv';
import { ${kindsName(k)} } from '../src/api/${api.version}/${lower(k)}.ts';
import { permissions, setup${k}Controller } from '../src/controllers/${lower(k)}.ts';

let env: SharedEnvironment;
before(async () => {
  env = await sharedEnvironment({ nodes: 1, log: () => {} }); // npm test's (test/setup.ts), or this file's own
});
after(async () => {
  await env?.release(); // in a hook, so a failed test or a rejected op.stop() cannot skip it
});

test('a ${k} becomes Ready', async () => {
  const op = await startTestManager(env, {
    name: '${p.projectName}',
    kinds: [${kindsName(k)}],
    permissions,
    setup: setup${k}Controller,
  });
  try {
    await op.client.create(${kindsName(k)}, { metadata: { ${ns}name: 'sample' }, spec: {} });
    const ready = await op.eventually('the ${k} to be Ready', async () => {
      const obj = await op.client.get(${kindsName(k)}, { ${ns}name: 'sample' });
      return getCondition(obj.status?.conditions, 'Ready');
    });
    assert.equal(ready.status, 'True');
  } finally {
    await op.stop(); // always, even when an assertion failed; it rejects if the manager was refused or failed
  }
});
`;
}

export function sampleFile(p: Project, api: ApiEntry): string {
  return `${'# scaffolded by opkit — this file is yours to edit'}\n${yaml.dump(
    {
      apiVersion: `${apiGroup(p, api)}/${api.version}`,
      kind: api.kind,
      metadata: { name: `${lower(api.kind)}-sample` },
      spec: { replicas: 1 },
    },
    { noRefs: true, lineWidth: -1 },
  )}`;
}

/** main.ts with the controller's import and setup inserted at the markers (nothing else changes). */
export function registerController(main: string, api: ApiEntry): string {
  const importLine = `import { setup${api.kind}Controller } from './controllers/${lower(api.kind)}.ts';`;
  const setupLine = `setup${api.kind}Controller(mgr);`;
  if (main.includes(importLine)) return main;
  const lines = main.split('\n');
  const at = (mark: string) => lines.findIndex((l) => l.trim() === mark);
  const i = at(MARK_IMPORTS);
  if (i < 0) throw new CliError('ScaffoldMarkerMissing', `the marker "${MARK_IMPORTS}" is missing`);
  lines.splice(i, 0, importLine);
  const j = at(MARK_CONTROLLERS);
  if (j < 0) throw new CliError('ScaffoldMarkerMissing', `the marker "${MARK_CONTROLLERS}" is missing`);
  const indent = /^\s*/.exec(lines[j] ?? '')?.[0] ?? '';
  lines.splice(j, 0, `${indent}${setupLine}`);
  return lines.join('\n');
}
