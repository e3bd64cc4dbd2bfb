/**
 * Golden files pin what the scaffold writes. After an intended change to a template:
 *   UPDATE_GOLDEN=1 node --test packages/cli/test/golden.test.ts
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { ApiEntry, Project } from '../src/project/project.ts';
import {
  apiFile,
  controllerFile,
  controllerTestFile,
  initFiles,
  registerController,
  sampleFile,
} from '../src/scaffold/templates.ts';

const GOLDEN = fileURLToPath(new URL('./golden/', import.meta.url));
const project: Project = {
  layout: 'opkit.dev/v1',
  projectName: 'golden-operator',
  domain: 'example.com',
  namespace: 'golden-operator-system',
  image: 'golden-operator:0.1.0',
  resources: [],
};
const api: ApiEntry = {
  group: 'app',
  version: 'v1alpha1',
  kind: 'AppService',
  plural: 'appservices',
  namespaced: true,
  controller: true,
};

test('templates match their golden files', async () => {
  const files = new Map(initFiles(project));
  files.set('src/main.ts', registerController(files.get('src/main.ts') ?? '', api));
  files.set('src/api/v1alpha1/appservice.ts', apiFile(project, api));
  files.set('src/controllers/appservice.ts', controllerFile(project, api));
  files.set('test/appservice.test.ts', controllerTestFile(project, api));
  files.set('config/samples/app_v1alpha1_appservice.yaml', sampleFile(project, api));
  for (const [path, content] of files) {
    const golden = join(GOLDEN, `${path}.golden`);
    if (process.env.UPDATE_GOLDEN) {
      await mkdir(dirname(golden), { recursive: true });
      await writeFile(golden, content);
      continue;
    }
    assert.equal(content, await readFile(golden, 'utf8'), `${path} differs from ${golden} (UPDATE_GOLDEN=1 to accept)`);
  }
  assert.equal(
    registerController(files.get('src/main.ts') ?? '', api),
    files.get('src/main.ts'),
    'registering twice changes nothing',
  );
});

test('scaffolded TypeScript is formatted and has no casts to never', async () => {
  const biome = fileURLToPath(new URL('../../../node_modules/.bin/biome', import.meta.url));
  const scaffolded = [
    'src/main.ts',
    'src/api/v1alpha1/appservice.ts',
    'src/controllers/appservice.ts',
    'test/appservice.test.ts',
  ];
  for (const path of scaffolded) {
    const text = await readFile(join(GOLDEN, `${path}.golden`), 'utf8');
    const formatted = spawnSync(biome, ['format', `--stdin-file-path=${path}`], { input: text, encoding: 'utf8' });
    assert.equal(formatted.status, 0, formatted.stderr);
    assert.equal(text, formatted.stdout, `${path} is not formatted as biome would`);
  }
  for (const path of scaffolded) {
    const text = await readFile(join(GOLDEN, `${path}.golden`), 'utf8');
    assert.doesNotMatch(text, /as never/, `${path} casts to never`);
    const long = text.split('\n').filter((l) => l.length > 120);
    assert.deepEqual(long, [], `${path} has lines over 120 characters`);
  }
});
