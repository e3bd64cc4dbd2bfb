// A fleet operator of a user's (fixtures/fleet: Tenants of the hub copied into every member, built from
// docs/multicluster.md) under `opkit chaos`: `opkit generate` writes its members' RBAC from `memberPermissions`, and a
// run with two member clusters, in which members go away and come back (`member-away`, `member-down`) and the leader
// pauses or crashes between its writes in a member, finds no violation, its own invariant included; so does a sharded
// run, the members spread over three replicas, one of them paused past its Lease. The operator runs in each member
// under the generated RBAC only: a permission missing from `memberPermissions` is an `rbac-allows` violation.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/fleet/', import.meta.url));

function opkit(cwd: string, args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { cwd, encoding: 'utf8', timeout: 900_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

let work: string;
let dir: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-fleet-chaos-'));
  assert.equal(opkit(work, ['init', 'tenant-operator', '--domain', 'example.org']).code, 0);
  dir = join(work, 'tenant-operator');
  const linked = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
  assert.equal(linked.status, 0, linked.stderr);
  const args = ['create', 'api', '--group', 'fleet', '--version', 'v1', '--kind', 'Tenant', '--controller'];
  const created = opkit(dir, args);
  assert.equal(created.code, 0, created.out);
  await copyFile(join(FIXTURES, 'tenant-controller.ts'), join(dir, 'src/controllers/tenant.ts'));
  await mkdir(join(dir, 'test/chaos'), { recursive: true });
  await copyFile(join(FIXTURES, 'chaos-tenants.ts'), join(dir, 'test/chaos/tenants.ts'));
  const generated = opkit(dir, ['generate']);
  assert.equal(generated.code, 0, generated.out);
});

test('the operator type-checks in its project, against the published API', () => {
  const tsc = spawnSync(
    join(ROOT, 'node_modules/.bin/tsc'),
    ['--noEmit', '-p', join(dir, 'tsconfig.json'), '--customConditions', '@opkit/source'],
    { encoding: 'utf8', timeout: 120_000 },
  );
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

test("opkit generate writes the members' RBAC from memberPermissions, apart from the hub's install", async () => {
  const rbac = await readFile(join(dir, 'config/fleet/member-rbac.yaml'), 'utf8');
  assert.match(rbac, /name: tenant-operator-member\n/);
  assert.match(rbac, /- configmaps\n/);
  assert.match(rbac, /type: kubernetes\.io\/service-account-token/);
  assert.doesNotMatch(rbac, /tenants|leases/);
  assert.doesNotMatch(await readFile(join(dir, 'dist/install.yaml'), 'utf8'), /tenant-operator-member/);
  assert.equal(opkit(dir, ['generate', '--check']).code, 0);
});

test('a permission missing from memberPermissions is rbac-allows, naming the member, the request and the fix', {
  timeout: 600_000,
}, async () => {
  const file = join(dir, 'src/controllers/tenant.ts');
  const source = await readFile(file, 'utf8');
  const without = source.replace("['get', 'create', 'patch']", "['get', 'create']");
  assert.notEqual(without, source, 'the fixture has the line this test edits');
  await writeFile(file, without);
  try {
    assert.equal(opkit(dir, ['generate']).code, 0);
    const r = opkit(dir, ['chaos', '--trial', 'tenant:fault-free', '--no-generated', '--seed', '1']);
    assert.equal(r.code, 1, r.out);
    assert.match(
      r.out,
      /✗ rbac-allows — tenant:fault-free, no fault, over the whole run\n\s+\d+ requests? refused by the RBAC in member member-1 \(patch namespaces chaos-[0-9a-f]+-1\): .*cannot patch resource "namespaces".*; add it to the controller's memberPermissions, then run opkit generate/,
    );
  } finally {
    await writeFile(file, source);
    assert.equal(opkit(dir, ['generate']).code, 0);
  }
});

test('without memberPermissions, config/fleet is no longer generated: --check names it, generate removes it', async () => {
  const file = join(dir, 'src/controllers/tenant.ts');
  const source = await readFile(file, 'utf8');
  await writeFile(file, source.replace('export const memberPermissions', 'const memberPermissions'));
  try {
    const check = opkit(dir, ['generate', '--check']);
    assert.equal(check.code, 1, check.out);
    assert.match(check.out, /config\/fleet\/member-rbac\.yaml \(no longer generated\)/);
    const removed = opkit(dir, ['generate']);
    assert.match(removed.out, /removed config\/fleet\/member-rbac\.yaml \(no longer generated\)/);
  } finally {
    await writeFile(file, source);
    assert.equal(opkit(dir, ['generate']).code, 0);
  }
});

test('members that go away and come back, and a leader paused or crashed between its writes: no violation', {
  timeout: 900_000,
}, async () => {
  const faults = 'member-away,member-down,pause,crash';
  const r = opkit(dir, [
    'chaos',
    '--no-generated',
    '--faults',
    faults,
    '--trials',
    '6',
    '--seed',
    '3',
    '--budget',
    '12m',
  ]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /with 2 member clusters/);
  assert.match(r.out, /trial \w+:\d:member-away ✓/);
  assert.match(r.out, /trial \w+:\d:member-down ✓/);
  assert.doesNotMatch(r.out, /the fault did not fire/);
});

test('sharded, the members spread over three replicas: one paused past its Lease writes to no member again', {
  timeout: 900_000,
}, async () => {
  const args = ['--no-generated', '--faults', 'pause,member-away', '--trials', '4', '--seed', '5', '--budget', '12m'];
  const r = opkit(dir, ['chaos', '--sharding', ...args]);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /three sharded replicas, with 2 member clusters/);
  assert.match(r.out, /trial \w+:\d:pause ✓/);
  assert.doesNotMatch(r.out, /the fault did not fire/);
});
