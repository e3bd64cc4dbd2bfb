// opkit chaos on a freshly scaffolded project: its default scenario (the sample: applied, edited, deleted) passes a
// reduced run; the same project with a controller that writes a new status on every reconcile fails it, naming the
// invariant and the command that replays it; a project that does not start is its own error, never a violation.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const LINK = fileURLToPath(new URL('./fixtures/link-workspace.ts', import.meta.url));

function opkit(cwd: string, args: string[]) {
  const r = spawnSync(process.execPath, [MAIN, ...args], { cwd, encoding: 'utf8', timeout: 600_000 });
  return { code: r.status, out: r.stdout + r.stderr };
}

let work: string;
let dir: string;
let controller: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-chaos-'));
  assert.equal(opkit(work, ['init', 'gizmo-operator', '--domain', 'example.org']).code, 0);
  dir = join(work, 'gizmo-operator');
  const linked = spawnSync(process.execPath, [LINK, dir], { encoding: 'utf8' });
  assert.equal(linked.status, 0, linked.stderr);
  const args = ['create', 'api', '--group', 'shop', '--version', 'v1', '--kind', 'Gizmo', '--controller'];
  const created = opkit(dir, args);
  assert.equal(created.code, 0, created.out);
  controller = join(dir, 'src/controllers/gizmo.ts');
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

test("a scaffolded project's chaos run passes: every trial, and its JSON report", { timeout: 600_000 }, async () => {
  const r = opkit(dir, ['chaos', '--trials', '3', '--seed', '5', '--json', 'chaos.json']);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /\[1\/2\] fault-free samples:fault-free ✓/);
  assert.match(r.out, /\[2\/2\] fault-free generated:Gizmo:fault-free ✓/);
  assert.match(r.out, /✓ no violation: 2 fault-free runs and 3 of \d+ trials/);
  const report = JSON.parse(await readFile(join(dir, 'chaos.json'), 'utf8')) as { seed: number; trials: unknown[] };
  assert.equal(report.seed, 5);
  assert.equal(report.trials.length, 3);
});

test('a controller that writes a new status on every reconcile fails, naming the invariant and the replay', {
  timeout: 600_000,
}, async () => {
  const source = await readFile(controller, 'utf8');
  const timestamp = ['`reconciled at $', '{new Date().toISOString()}`'].join(''); // code for the file, not a template
  const stamped = source.replace("message: 'the spec is applied',", `message: ${timestamp},`);
  assert.notEqual(stamped, source, 'the scaffolded controller has the line this test edits');
  await writeFile(controller, stamped);
  try {
    const r = opkit(dir, ['chaos', '--trials', '2', '--no-generated']);
    assert.equal(r.code, 1, r.out);
    assert.match(r.out, /✗ settles — samples:fault-free, no fault, after step 1 \(apply Gizmo gizmo-sample\)/);
    assert.match(r.out, /gizmos\/status chaos-[0-9a-f]+-1\/gizmo-sample: \d+ writes \((update|patch)[^)]*\)/);
    assert.match(r.out, /replay: npx opkit chaos --trial 'samples:fault-free' --seed \d+/);
    assert.match(r.out, /no trials for samples: the fault-free run already broke an invariant/);
  } finally {
    await writeFile(controller, source);
  }
});

test('a project whose operator does not start is refused before any control plane starts', async () => {
  const main = join(dir, 'src/main.ts');
  const source = await readFile(main, 'utf8');
  // a module that is not there, imported after the shebang line
  await writeFile(main, source.replace('\n', "\nimport './broken-on-purpose.ts';\n"));
  try {
    const r = opkit(dir, ['chaos']);
    assert.equal(r.code, 1, r.out);
    assert.match(
      r.out,
      /opkit: the operator does not start \(node src\/main\.ts --help exited 1\); fix it before a chaos run/,
    );
    assert.match(r.out, /broken-on-purpose/);
    assert.doesNotMatch(r.out, /starting a control plane/);
  } finally {
    await writeFile(main, source);
  }
});

test('bad input names the file and the step and is never a violation of the operator', {
  timeout: 300_000,
}, async () => {
  const own = join(dir, 'test', 'chaos');
  await mkdir(own, { recursive: true });
  const file = join(own, 'scale.ts');
  try {
    await writeFile(file, 'export const scenarios = { name: "not an array" };\n');
    const shape = opkit(dir, ['chaos']);
    assert.equal(shape.code, 1, shape.out);
    assert.match(shape.out, /opkit: test\/chaos\/scale\.ts: export scenarios must be an array/);
    const gizmo = (replicas: unknown) =>
      JSON.stringify({ apiVersion: 'shop.example.org/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec: { replicas } });
    await writeFile(
      file,
      `export const scenarios = [{ name: 'scale', steps: [{ apply: ${gizmo(1)} }, { apply: ${gizmo(-3)} }] }];\n`,
    );
    const refused = opkit(dir, ['chaos', '--trial', 'scale:fault-free']);
    assert.equal(refused.code, 1, refused.out);
    assert.match(
      refused.out,
      /opkit: test\/chaos\/scale\.ts: scenario "scale", step 2 \(apply Gizmo g\): the apiserver refused to apply Gizmo chaos-[0-9a-f]+-1\/g \(422\): .*spec\.replicas/,
    );
    assert.doesNotMatch(refused.out, /violation/);
  } finally {
    await rm(own, { recursive: true, force: true });
  }
});
