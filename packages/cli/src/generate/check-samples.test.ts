import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { defineKind, type KubeObject } from '@opkit/runtime';
import type { CustomKind } from '@opkit/runtime/crd';
import { Type } from '@sinclair/typebox';
import type { Project } from '../project/project.ts';
import { checkSamples, describeSampleProblem } from './check-samples.ts';
import type { LoadedApi } from './manifests.ts';

const project: Project = {
  layout: 'opkit.dev/v1',
  projectName: 'cron-operator',
  domain: 'example.com',
  namespace: 'cron-system',
  image: 'cron-operator:0.1.0',
  resources: [],
};
const CronJobs = defineKind({
  group: 'batch.example.com',
  version: 'v1',
  kind: 'CronJob',
  plural: 'cronjobs',
  scope: 'Namespaced',
  spec: Type.Object({
    schedule: Type.String({ maxLength: 64 }),
    suspend: Type.Optional(Type.Boolean()),
  }),
});
const apis: LoadedApi[] = [
  {
    entry: { group: 'batch', version: 'v1', kind: 'CronJob', plural: 'cronjobs', namespaced: true, controller: false },
    kind: CronJobs as unknown as CustomKind<KubeObject>,
    permissions: [],
  },
];
const API = 'src/api/v1/cronjob.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'opkit-samples-'));
  await mkdir(join(dir, 'config/samples'), { recursive: true });
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function samples(files: Record<string, string>) {
  await rm(join(dir, 'config/samples'), { recursive: true, force: true });
  await mkdir(join(dir, 'config/samples'), { recursive: true });
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, 'config/samples', name), text);
  return checkSamples(dir, project, apis);
}

const cron = (spec: string, apiVersion = 'batch.example.com/v1', kind = 'CronJob') =>
  `apiVersion: ${apiVersion}\nkind: ${kind}\nmetadata:\n  name: nightly\nspec:\n${spec}`;

test('a sample that fits the API has no problem, and the generated kustomization.yaml is not a sample', async () => {
  assert.deepEqual(
    await samples({
      'batch_v1_cronjob.yaml': cron('  schedule: "0 3 * * *"\n'),
      'kustomization.yaml': 'resources:\n  - batch_v1_cronjob.yaml\n',
    }),
    [],
  );
});

test('a sample that no longer fits the API names the file, the field and the apiserver’s words, and is not rewritten', async () => {
  const text = cron('  suspend: true\n');
  const problems = await samples({ 'batch_v1_cronjob.yaml': text });
  assert.deepEqual(problems, [
    { file: 'config/samples/batch_v1_cronjob.yaml', field: 'spec.schedule', detail: 'Required value', api: API },
  ]);
  assert.equal(
    describeSampleProblem(problems[0] as (typeof problems)[0]),
    `config/samples/batch_v1_cronjob.yaml: spec.schedule: Required value — update the sample to the API in ${API}`,
  );
  assert.equal(await readFile(join(dir, 'config/samples/batch_v1_cronjob.yaml'), 'utf8'), text);
});

test('in a file of several documents the document is named; other groups’ objects are not checked', async () => {
  const secret = 'apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  a: b\n';
  const problems = await samples({
    'all.yaml': `${secret}---\n${cron('  schedule: 5\n  suspend: "no"\n')}`,
  });
  assert.deepEqual(
    problems.map((p) => [p.file, p.field, p.detail.split(':')[0]]),
    [
      ['config/samples/all.yaml (document 2)', 'spec.schedule', 'Invalid value'],
      ['config/samples/all.yaml (document 2)', 'spec.suspend', 'Invalid value'],
    ],
  );
});

test('a kind the group does not have, a version the CRD does not serve, and a file that is not YAML', async () => {
  const problems = await samples({
    'a.yaml': cron('  schedule: x\n', 'batch.example.com/v1', 'CronTab'),
    'b.yaml': cron('  schedule: x\n', 'batch.example.com/v2'),
    'c.yml': 'apiVersion: [\n',
  });
  assert.deepEqual(
    problems.map((p) => describeSampleProblem(p).replace(/ — .*/, '')),
    [
      'config/samples/a.yaml: kind: Unsupported value: "CronTab": batch.example.com has "CronJob"',
      'config/samples/b.yaml: apiVersion: Unsupported value: "batch.example.com/v2": the CronJob CRD serves "batch.example.com/v1"',
      'config/samples/c.yml: not YAML: unexpected end of the stream within a flow collection (2:1)',
    ],
  );
  assert.match(describeSampleProblem(problems[2] as (typeof problems)[0]), / — fix the file$/);
});
