import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Applier, Client, loadConfig, parseManifests } from '@opkit/runtime/client';
import type { MutatingPolicy, Policy } from '@opkit/runtime/policy';
import { type Environment, start, waitFor } from '@opkit/testenv';
import { type KindRef, loadValidator } from '@opkit/testenv/cel';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

function opkit(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [MAIN, ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    timeout: 120_000,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));

/** Links the workspace's packages into a scaffolded project, as `npm install` would install them from the registry. */
function linkWorkspace(project: string): void {
  const r = spawnSync(process.execPath, [LINK, project], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}

async function files(dir: string, base = dir): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await files(p, base)));
    else out.push(relative(base, p));
  }
  return out.sort();
}

describe('opkit init → create api → generate → a working operator', () => {
  let work: string;
  let env: Environment;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'opkit-scaffold-'));
    env = await start({ nodes: 1, auditLog: true, log: () => {} });
  });
  after(async () => {
    await env?.stop();
    await rm(work, { recursive: true, force: true });
  });

  test('the full journey, with the operator under its generated RBAC making zero forbidden requests', {
    timeout: 300_000,
  }, async () => {
    assert.equal(opkit(work, ['init', 'gadget-operator', '--domain', 'example.org']).code, 0);
    const dir = join(work, 'gadget-operator');
    linkWorkspace(dir);
    const created = opkit(dir, [
      'create',
      'api',
      '--group',
      'shop',
      '--version',
      'v1beta1',
      '--kind',
      'Gadget',
      '--controller',
    ]);
    assert.equal(created.code, 0, created.out);
    // add a field, as a user would
    const apiPath = join(dir, 'src/api/v1beta1/gadget.ts');
    const api = await readFile(apiPath, 'utf8');
    await writeFile(
      apiPath,
      api.replace(
        "description: 'How many to run.' }), 1),",
        "description: 'How many to run.' }), 1),\n    color: Type.Optional(Type.String({ maxLength: 20 })),",
      ),
    );
    // a CEL rule with a typo fails generate, naming the file, the schema path and the rule, before anything is written
    const crdPath = join(dir, 'config/crd/bases/shop.example.org_gadgets.yaml');
    const before = await readFile(crdPath, 'utf8');
    const good = await readFile(apiPath, 'utf8');
    const typo =
      "{ description: 'The desired state of a Gadget.', 'x-kubernetes-validations': [{ rule: 'self.colour != \"rot\"' }] }";
    await writeFile(apiPath, good.replace("{ description: 'The desired state of a Gadget.' }", typo));
    const refused = opkit(dir, ['generate']);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /src\/api\/v1beta1\/gadget\.ts: the apiserver would refuse the Gadget CRD:/);
    assert.match(
      refused.out,
      /version v1beta1, schema spec, rule `self\.colour != "rot"`: compilation failed: .*undefined field 'colour'/,
    );
    assert.match(refused.out, /nothing was written/);
    assert.equal(await readFile(crdPath, 'utf8'), before, 'the CRD file is untouched');
    await writeFile(apiPath, good);
    const stale = opkit(dir, ['generate', '--check']);
    assert.equal(stale.code, 1, 'a changed API makes the CRD stale');
    assert.match(stale.out, /config\/crd\/bases\/shop\.example\.org_gadgets\.yaml/);
    assert.equal(opkit(dir, ['generate']).code, 0);
    assert.equal(opkit(dir, ['generate', '--check']).code, 0);
    assert.match(
      await readFile(join(dir, 'config/crd/bases/shop.example.org_gadgets.yaml'), 'utf8'),
      /color:\n\s+type: string\n\s+maxLength: 20/,
    );
    // The linked workspace packages are unbuilt: their types come from the sources, through the workspace condition.
    const tsc = spawnSync(
      join(ROOT, 'node_modules/.bin/tsc'),
      ['--noEmit', '-p', join(dir, 'tsconfig.json'), '--customConditions', '@opkit/source'],
      { encoding: 'utf8' },
    );
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    const childEnv = { ...process.env };
    delete childEnv.NODE_TEST_CONTEXT; // a nested test run must report as a top-level one
    // npm test's command: one control plane for the run (test/setup.ts), which the test file attaches to
    const tests = spawnSync(process.execPath, [MAIN, 'test'], {
      cwd: dir,
      encoding: 'utf8',
      env: childEnv,
      timeout: 120_000,
    });
    assert.equal(tests.status, 0, `the scaffold's own tests pass:\n${tests.stdout}${tests.stderr}`);
    assert.match(tests.stdout, /pass 1\n/, tests.stdout);
    assert.equal(tests.stderr.match(/control plane ready in/g)?.length, 1, `one control plane: ${tests.stderr}`);

    // the generated install: CRD accepted, RBAC applied; the operator runs as its ServiceAccount
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }));
    const objects = parseManifests(await readFile(join(dir, 'dist/install.yaml'), 'utf8')).filter(
      (o) => o.kind !== 'Deployment' && o.kind !== 'Service',
    );
    await new Applier(admin, 'test').applyAll(objects);
    const sample = parseManifests(await readFile(join(dir, 'config/samples/shop_v1beta1_gadget.yaml'), 'utf8'));
    await new Applier(admin, 'test').applyAll(sample, { namespace: 'default' });
    const sa = await env.kubeconfigFor({ namespace: 'gadget-operator-system', name: 'gadget-operator' });
    const auditFrom = (await readFile(env.auditLogPath as string, 'utf8')).length;
    // the operator as its image runs it: bundled into one program (the Dockerfile's build stage)
    const bundled = opkit(dir, ['build', '--js']);
    assert.equal(bundled.code, 0, bundled.out);
    assert.match(bundled.out, /bundled src\/main\.ts into dist\/operator\/main\.mjs/);
    assert.match(await readFile(join(dir, '.gitignore'), 'utf8'), /^dist\/operator\/$/m);
    const op = spawnSync(
      process.execPath,
      [
        '-e',
        `const { spawn } = await import('node:child_process');
         const p = spawn(process.execPath, ['dist/operator/main.mjs', '--kubeconfig', ${JSON.stringify(sa.path)}, '--metrics-bind-address', '0', '--health-probe-bind-address', '0', '--leader-elect', '--leader-election-namespace', 'gadget-operator-system'], { stdio: 'inherit' });
         setTimeout(() => p.kill('SIGTERM'), 8000);
         p.on('exit', (c) => process.exit(c ?? 1));`,
      ],
      { cwd: dir, encoding: 'utf8', timeout: 60_000, input: '' },
    );
    assert.equal(op.status, 0, `the operator stopped cleanly on SIGTERM: ${op.stdout}${op.stderr}`);
    const gadget = await admin.transport.request<{ status?: { conditions?: { type: string; status: string }[] } }>({
      method: 'GET',
      path: '/apis/shop.example.org/v1beta1/namespaces/default/gadgets/gadget-sample',
    });
    assert.equal(
      gadget.status?.conditions?.find((c) => c.type === 'Ready')?.status,
      'True',
      'the sample was reconciled',
    );
    admin.close();
    const audit = (await readFile(env.auditLogPath as string, 'utf8')).slice(auditFrom).split('\n').filter(Boolean);
    const mine = audit
      .map(
        (l) =>
          JSON.parse(l) as {
            user: { username: string };
            responseStatus?: { code?: number };
            verb: string;
            objectRef?: { resource?: string };
          },
      )
      .filter((e) => e.user.username === 'system:serviceaccount:gadget-operator-system:gadget-operator');
    assert.ok(mine.length > 0, 'the operator talked to the apiserver');
    const forbidden = mine
      .filter((e) => e.responseStatus?.code === 403)
      .map((e) => `${e.verb} ${e.objectRef?.resource}`);
    assert.deepEqual(forbidden, [], 'zero 403 responses under the generated RBAC');
    assert.ok(
      mine.some((e) => e.objectRef?.resource === 'leases' && e.verb === 'create'),
      'it took the leader lease',
    );

    // a bundle and a dry-run build
    assert.equal(opkit(dir, ['bundle', '--version', '0.2.0', '--channels', 'alpha,stable']).code, 0);
    const csv = await readFile(join(dir, 'bundle/manifests/gadget-operator.clusterserviceversion.yaml'), 'utf8');
    assert.match(csv, /name: gadget-operator\.v0\.2\.0/);
    assert.match(csv, /strategy: deployment/);
    assert.match(csv, /kind: Gadget/);
    const annotations = await readFile(join(dir, 'bundle/metadata/annotations.yaml'), 'utf8');
    const dockerfile = await readFile(join(dir, 'bundle.Dockerfile'), 'utf8');
    for (const line of annotations.split('\n').filter((l) => l.includes('operators.operatorframework.io'))) {
      const [k, v] = line.trim().split(/:\s+/) as [string, string];
      assert.ok(dockerfile.includes(`LABEL ${k}=${v}`), `bundle.Dockerfile labels ${k}`);
    }
  });

  test('a Validating- and a MutatingAdmissionPolicy in src/policies.ts: checked by generate, written to config/ and the chart, enforced as evaluated offline', async () => {
    const dir = join(work, 'gadget-operator');
    const policies = join(dir, 'src/policies.ts');
    const policyFile = (
      expression: string,
      color = 'color',
    ) => `import { defineMutatingPolicy, definePolicy } from '@opkit/runtime/policy';
import { Gadgets } from './api/v1beta1/gadget.ts';

export const policies = [
  definePolicy({
    name: 'gadget-replicas',
    match: [{ kind: Gadgets }],
    validations: [{ expression: ${JSON.stringify(expression)}, message: 'at most 5 gadgets' }],
  }),
  defineMutatingPolicy({
    name: 'gadget-color',
    match: [{ kind: Gadgets, operations: ['CREATE'] }],
    mutations: [{ applyConfiguration: 'has(object.spec.color) ? Object{} : Object{spec: Object.spec{${color}: "grün"}}' }],
  }),
];
`;
    // a typo in a field name compiles, but not against the Gadget's schema: generate refuses it, writing nothing
    await writeFile(policies, policyFile('object.spec.replicass <= 5'));
    const refused = opkit(dir, ['generate']);
    assert.equal(refused.code, 1, refused.out);
    assert.match(refused.out, /src\/policies\.ts: policy gadget-replicas:/);
    assert.match(
      refused.out,
      /spec\.validations\[0\]\.expression `object\.spec\.replicass <= 5` \(does not type-check\): .*undefined field 'replicass'/,
    );
    await assert.rejects(readFile(join(dir, 'config/policies/gadget-replicas.yaml')), 'nothing was written');
    // a field the mutation sets that the Gadget's schema does not have: refused too, naming the mutation
    await writeFile(policies, policyFile('object.spec.replicas <= 5', 'colour'));
    const mistyped = opkit(dir, ['generate']);
    assert.equal(mistyped.code, 1, mistyped.out);
    assert.match(mistyped.out, /src\/policies\.ts: policy gadget-color:/);
    assert.match(
      mistyped.out,
      /spec\.mutations\[0\]\.applyConfiguration\.expression `.*` \(does not type-check\): .*undefined field 'colour'/,
    );
    await assert.rejects(readFile(join(dir, 'config/policies/gadget-color.yaml')), 'nothing was written');

    await writeFile(policies, policyFile('object.spec.replicas <= 5'));
    const generated = opkit(dir, ['generate', '--helm']);
    assert.equal(generated.code, 0, generated.out);
    assert.match(
      await readFile(join(dir, 'config/policies/gadget-replicas.yaml'), 'utf8'),
      /kind: ValidatingAdmissionPolicyBinding/,
    );
    assert.match(await readFile(join(dir, 'config/default/kustomization.yaml'), 'utf8'), /- \.\.\/policies/);
    assert.match(
      await readFile(join(dir, 'dist/chart/templates/policies.yaml'), 'utf8'),
      /name: gadget-replicas-binding/,
    );

    // applied from dist/install.yaml, the apiserver refuses what the offline evaluation refuses, word for word
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }));
    try {
      const install = parseManifests(await readFile(join(dir, 'dist/install.yaml'), 'utf8'));
      await new Applier(admin, 'test').applyAll(install.filter((o) => o.kind?.includes('AdmissionPolicy')));
      const { Gadgets } = (await import(pathToFileURL(join(dir, 'src/api/v1beta1/gadget.ts')).href)) as {
        Gadgets: KindRef;
      };
      const gadget = {
        apiVersion: 'shop.example.org/v1beta1',
        kind: 'Gadget',
        metadata: { name: 'big', namespace: 'default' },
        spec: { replicas: 9 },
      };
      let message = '';
      await waitFor(
        'the policy enforced',
        async () => {
          const r = await admin.transport
            .request({
              method: 'POST',
              path: '/apis/shop.example.org/v1beta1/namespaces/default/gadgets?dryRun=All',
              body: gadget,
            })
            .then(
              () => '',
              (e: Error) => e.message,
            );
          message = r;
          return r !== '';
        },
        60_000,
      );
      const { policies: defined } = (await import(pathToFileURL(policies).href)) as {
        policies: [Policy, MutatingPolicy];
      };
      const validator = await loadValidator();
      const offline = validator.evaluatePolicy(defined[0], {
        operation: 'CREATE',
        kind: Gadgets,
        object: gadget,
      });
      assert.equal(offline.allowed, false);
      assert.equal(
        offline.status?.message,
        `gadgets.shop.example.org "big" is forbidden: ValidatingAdmissionPolicy 'gadget-replicas' with binding 'gadget-replicas-binding' denied request: at most 5 gadgets`,
      );
      assert.ok(message.includes(offline.status?.message ?? '-'), message);

      // the mutating policy sets a color the gadget lacks, as the offline evaluation does
      const small = { ...gadget, metadata: { name: 'small', namespace: 'default' }, spec: { replicas: 2 } };
      const crd = install.find(
        (o) => o.kind === 'CustomResourceDefinition' && o.metadata?.name === 'gadgets.shop.example.org',
      );
      const mutated = validator.evaluateMutatingPolicy(defined[1], {
        operation: 'CREATE',
        kind: Gadgets,
        object: small,
        crd: crd as object,
      });
      assert.equal(mutated.mutated, true);
      let stored: { spec?: { color?: string } } = {};
      await waitFor(
        'the mutating policy enforced',
        async () => {
          stored = await admin.transport.request({
            method: 'POST',
            path: '/apis/shop.example.org/v1beta1/namespaces/default/gadgets?dryRun=All',
            body: small,
          });
          return stored.spec?.color !== undefined;
        },
        60_000,
      );
      assert.equal(stored.spec?.color, 'grün');
      assert.deepEqual((mutated.object as typeof stored).spec, stored.spec);
    } finally {
      admin.close();
    }
  });

  test('run applies the CRDs, then starts the operator with the cluster’s kubeconfig', async () => {
    const dir = join(work, 'gadget-operator');
    const r = opkit(dir, ['run', '--', '--help'], { KUBECONFIG: env.kubeconfigPath });
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /applied 1 CRD\(s\) to https:\/\/127\.0\.0\.1:\d+; running gadget-operator/);
    assert.match(r.out, /--leader-elect/, 'the operator printed its help');
    const unreachable = opkit(dir, ['run'], {
      KUBECONFIG: join(work, 'nope'),
      OPKIT_STATE_DIR: join(work, 'no-state'),
    });
    assert.equal(unreachable.code, 1);
    assert.match(unreachable.out, /no cluster answers .*start one with "npx opkit env up"/);
  });

  test('deploy applies the manifests with the image substituted; undeploy removes them', async () => {
    const dir = join(work, 'gadget-operator');
    const kube = { KUBECONFIG: env.kubeconfigPath };
    const deployed = opkit(dir, ['deploy', '--image', 'registry.example.org/gadget:1.2.3'], kube);
    assert.equal(deployed.code, 0, deployed.out);
    const admin = new Client(await loadConfig({ path: env.kubeconfigPath }));
    const { Deployments } = await import('@opkit/runtime/kinds');
    const d = await admin.get(Deployments, { namespace: 'gadget-operator-system', name: 'gadget-operator' });
    assert.equal(d.spec?.template.spec?.containers[0]?.image, 'registry.example.org/gadget:1.2.3');
    assert.equal(opkit(dir, ['undeploy'], kube).code, 0);
    await assert.rejects(admin.get(Deployments, { namespace: 'gadget-operator-system', name: 'gadget-operator' }));
    admin.close();
  });

  test('the AppService operator has the layout the scaffold produces', async () => {
    assert.equal(
      opkit(work, ['init', 'appservice-operator', '--domain', 'example.com', '--namespace', 'appservice-system']).code,
      0,
    );
    const dir = join(work, 'appservice-operator');
    linkWorkspace(dir);
    assert.equal(
      opkit(dir, ['create', 'api', '--group', 'app', '--version', 'v1alpha1', '--kind', 'AppService', '--controller'])
        .code,
      0,
    );
    const scaffolded = await files(dir);
    const actual = new Set(await files(join(ROOT, 'operators/appservice')));
    const missing = scaffolded.filter((f) => !actual.has(f));
    assert.deepEqual(missing, [], 'every file the scaffold makes exists in operators/appservice');
    const project = await readFile(join(dir, 'PROJECT'), 'utf8');
    assert.equal(await readFile(join(ROOT, 'operators/appservice/PROJECT'), 'utf8'), project, 'the same PROJECT');
  });
});
