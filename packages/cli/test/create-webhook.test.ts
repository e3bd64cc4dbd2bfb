import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));
const TSC = fileURLToPath(new URL('../../../node_modules/typescript/bin/tsc', import.meta.url));

function opkit(cwd: string, args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

let work: string;
let dir: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-create-webhook-'));
  assert.equal(opkit(work, ['init', 'gadget-operator', '--domain', 'example.org']).code, 0);
  dir = join(work, 'gadget-operator');
  const link = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
  assert.equal(link.status, 0, link.stderr);
  const api = opkit(dir, ['create', 'api', '--group', 'toys', '--version', 'v1', '--kind', 'Gadget', '--controller']);
  assert.equal(api.code, 0, api.out);
});

after(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

test('create webhook refuses what it cannot do, naming what to do, and writes nothing', async () => {
  const main = await readFile(join(dir, 'src/main.ts'), 'utf8');
  const none = opkit(dir, ['create', 'webhook', '--group', 'toys', '--version', 'v1', '--kind', 'Gadget']);
  assert.equal(none.code, 2);
  assert.match(none.out, /choose at least one of --defaulting, --validation, --conversion/);
  const unknown = opkit(dir, [
    'create',
    'webhook',
    '--group',
    'toys',
    '--version',
    'v1',
    '--kind',
    'Widget',
    '--validation',
  ]);
  assert.match(unknown.out, /Widget \(group toys\) is not in PROJECT: run opkit create api first/);
  const version = opkit(dir, [
    'create',
    'webhook',
    '--group',
    'toys',
    '--version',
    'v2',
    '--kind',
    'Gadget',
    '--validation',
  ]);
  assert.match(version.out, /src\/api\/v2\/gadget\.ts does not exist/);
  assert.equal(await readFile(join(dir, 'src/main.ts'), 'utf8'), main, 'main.ts untouched');
});

test('create webhook scaffolds typed handlers, registers them, and generate emits the configurations', async () => {
  const r = opkit(dir, [
    'create',
    'webhook',
    '--group',
    'toys',
    '--version',
    'v1',
    '--kind',
    'Gadget',
    '--defaulting',
    '--validation',
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /created src\/webhooks\/gadget\.ts/);
  assert.match(r.out, /created test\/webhooks\/gadget\.test\.ts/);
  const hooks = await readFile(join(dir, 'src/webhooks.ts'), 'utf8');
  assert.match(hooks, /import \{ gadgetWebhooks \} from '\.\/webhooks\/gadget\.ts';/);
  assert.match(hooks, /\.\.\.gadgetWebhooks\(\),/);
  const main = await readFile(join(dir, 'src/main.ts'), 'utf8');
  assert.match(main, /import \{ setupWebhooks \} from '\.\/webhooks\.ts';/);
  assert.match(main, /if \(process\.env\.ENABLE_WEBHOOKS !== 'false'\) setupWebhooks\(mgr\);/);
  const configs = await readFile(join(dir, 'config/webhook/manifests.yaml'), 'utf8');
  assert.match(configs, /path: \/mutate-toys-example-org-v1-gadget/);
  assert.match(configs, /path: \/validate-toys-example-org-v1-gadget/);
  // the scaffolded validator checks create and update: its webhook covers those, so deletes never wait for it
  const validating = configs.slice(configs.indexOf('kind: ValidatingWebhookConfiguration'));
  assert.match(validating, /operations:\n\s+- CREATE\n\s+- UPDATE\n\s+resources:/);
  assert.doesNotMatch(configs, /- DELETE/);
  const install = await readFile(join(dir, 'dist/install.yaml'), 'utf8');
  for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration', 'Certificate', 'Issuer']) {
    assert.match(install, new RegExp(`kind: ${kind}\\n`), kind);
  }
  assert.match(install, /containerPort: 9443/);
  assert.match(install, /mountPath: \/tmp\/k8s-webhook-server\/serving-certs/);

  // the scaffolded project type-checks with the new files
  const tsc = spawnSync(process.execPath, [TSC, '--noEmit', '-p', dir, '--customConditions', '@opkit/source'], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);

  // the scaffolded webhook test passes on a local control plane: defaulted, and refused with the field named
  const childEnv = { ...process.env };
  delete childEnv.NODE_TEST_CONTEXT; // a nested test run must report as a top-level one
  const tests = spawnSync(process.execPath, ['--test', 'test/webhooks/gadget.test.ts'], {
    cwd: dir,
    encoding: 'utf8',
    env: childEnv,
    timeout: 180_000,
  });
  assert.equal(tests.status, 0, `the scaffolded webhook test passes:\n${tests.stdout}${tests.stderr}`);
  assert.match(tests.stdout, /pass 2\n/, tests.stdout);
  assert.match(tests.stdout, /labelled by the defaulting webhook/);
  assert.match(tests.stdout, /refused by the validating webhook, naming the field/);

  // running it again changes nothing and refuses to overwrite the user's handlers
  const again = opkit(dir, [
    'create',
    'webhook',
    '--group',
    'toys',
    '--version',
    'v1',
    '--kind',
    'Gadget',
    '--validation',
  ]);
  assert.equal(again.code, 2);
  assert.match(again.out, /src\/webhooks\/gadget\.ts exists/);
});
