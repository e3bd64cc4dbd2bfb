import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Project } from '../project/project.ts';
import { apiFile, controllerFile, controllerTestFile, initFiles, nodeCheckScript } from './templates.ts';

/** Runs a package.json script line with `node` being the given binary. */
function runScript(line: string, node: string): { status: number | null; stderr: string } {
  const r = spawnSync('sh', ['-c', line.replace(/^node /, `${node} `)], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

test('the scaffolded prestart check needs no dependency: silent on a new enough Node, one line on an old one', () => {
  const script = nodeCheckScript('demo', '>=22.18');
  assert.deepEqual(runScript(script, process.execPath), { status: 0, stderr: '' });
  const tooNew = nodeCheckScript('demo', '>=99.0');
  const r = runScript(tooNew, process.execPath);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `demo needs Node >= 99.0 (this is ${process.version}): install Node 99 LTS or newer\n`);
  // the machine's own old Node, where there is one (Debian's Node 20 here)
  if (existsSync('/usr/bin/node')) {
    const old = spawnSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (Number(old.slice(1).split('.')[0]) < 22) {
      const o = runScript(script, '/usr/bin/node');
      assert.equal(o.status, 1);
      assert.match(o.stderr, /^demo needs Node >= 22\.18 \(this is v\d+/);
    }
  }
});

test('@opentelemetry/api: a peer of @opkit/runtime, and a dependency of every scaffolded project and of AppService', () => {
  const manifest = (path: string) =>
    JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as Record<string, Record<string, string>>;
  const runtime = manifest('../../../runtime/package.json');
  const range = runtime.peerDependencies?.['@opentelemetry/api'];
  assert.ok(range, '@opkit/runtime peers on @opentelemetry/api (one API instance per process)');
  assert.equal(runtime.dependencies?.['@opentelemetry/api'], undefined, 'not a dependency of its own');
  assert.equal(runtime.devDependencies?.['@opentelemetry/api'], range, 'installed for its own tests');
  const project: Project = {
    layout: 'opkit.dev/v1',
    projectName: 'gadget-operator',
    domain: 'example.com',
    namespace: 'gadget-system',
    image: 'gadget-operator:0.1.0',
    resources: [],
  };
  const scaffolded = JSON.parse(initFiles(project).get('package.json') ?? '{}') as {
    dependencies: Record<string, string>;
  };
  assert.equal(scaffolded.dependencies['@opentelemetry/api'], range, 'a project installed from the registry gets it');
  assert.equal(manifest('../../../../operators/appservice/package.json').dependencies?.['@opentelemetry/api'], range);
});

test("a kind's constant is its plural with the kind's capitals in every scaffolded file (Batch → Batches, not Batchs)", () => {
  const project = { projectName: 'batch-operator', domain: 'example.com', resources: [] } as unknown as Project;
  const batch = { group: 'ops', version: 'v1', kind: 'Batch', plural: 'batches', namespaced: true, controller: true };
  for (const text of [apiFile(project, batch), controllerFile(project, batch), controllerTestFile(project, batch)]) {
    assert.match(text, /\bBatches\b/);
    assert.doesNotMatch(text, /Batchs/);
  }
  assert.match(apiFile(project, batch), /^export const Batches = defineKind\(/m);
});
