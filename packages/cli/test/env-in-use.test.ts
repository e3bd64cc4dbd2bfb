/**
 * `opkit env status` and `down` with a named cluster that live `opkit run`s use, on a real control plane: status
 * reports the cluster it is asked about (every cluster without --name, with the runs using it), and down refuses to
 * stop a cluster a live run uses — naming each run (pid, project directory, command) and how to proceed — until the
 * runs have ended or --force is given.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type OpkitRun, opkitSync, scaffoldProject, startOpkitRun, untilLogged } from './fixtures/project.ts';

let work: string;
let childEnv: NodeJS.ProcessEnv;
let kubeconfig: string;
let server: string;
let gadgets: string;
let gizmos: string;

const opkit = (args: string[], cwd = work) => opkitSync(cwd, args, childEnv);
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const QUIET = ['--', '--metrics-bind-address', '0', '--health-probe-bind-address', '0'];

const startRun = (dir: string, args: string[]) => startOpkitRun(dir, args, childEnv);
const untilRunning = (run: OpkitRun) => untilLogged(run, /^opkit: applied /m);

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'opkit-env-in-use-'));
  const { KUBECONFIG: _unset, ...rest } = process.env;
  childEnv = { ...rest, OPKIT_STATE_DIR: join(work, 'state') };
  const up = opkit(['env', 'up', '--name', 'foo', '--nodes', '0']);
  assert.equal(up.code, 0, up.out);
  kubeconfig = /^export KUBECONFIG=(.+)$/m.exec(up.out)?.[1] ?? '';
  server = / at (https:\/\/127\.0\.0\.1:\d+)/.exec(up.out)?.[1] ?? '';
  gadgets = scaffoldProject(work, 'gadget-operator', 'Gadget', { env: childEnv });
  gizmos = scaffoldProject(work, 'gizmo-operator', 'Gizmo', { env: childEnv });
});

after(async () => {
  opkit(['env', 'down', '--name', 'foo', '--force']);
  await rm(work, { recursive: true, force: true });
});

test('env status reports the cluster it is asked about: without --name every local cluster, with its state', () => {
  const all = opkit(['env', 'status']);
  assert.equal(all.code, 0, all.out);
  assert.match(all.out, new RegExp(`^cluster "foo": ready at ${literal(server)}$`, 'm'));
  assert.match(all.out, new RegExp(`^ {2}export KUBECONFIG=${literal(kubeconfig)}$`, 'm'));
  assert.doesNotMatch(all.out, /"default"/, all.out);

  const named = opkit(['env', 'status', '--name', 'foo']);
  assert.equal(named.code, 0, named.out);
  assert.match(named.out, new RegExp(`^cluster "foo": ready at ${literal(server)}$`, 'm'));

  const other = opkit(['env', 'status', '--name', 'default']);
  assert.equal(other.code, 3, other.out);
  assert.match(other.out, /^cluster "default": not running \(start it with: npx opkit env up\); running: "foo"/m);

  const down = opkit(['env', 'down']);
  assert.equal(down.code, 0, down.out);
  assert.match(down.out, /^opkit: cluster "default" is not running; running: "foo" \(opkit env down --name foo\)$/m);
  assert.equal(opkit(['env', 'status', '--name', 'foo']).code, 0, 'foo still runs');
});

test('env down refuses to stop a cluster live opkit runs use, naming each run and what to do; --force stops it', {
  timeout: 300_000,
}, async () => {
  const runs = [
    startRun(gadgets, ['--cluster', 'foo', ...QUIET]),
    startRun(gizmos, ['--kubeconfig', kubeconfig, ...QUIET]),
  ];
  try {
    for (const run of runs) await untilRunning(run);
    const [byName, byKubeconfig] = runs.map((r) => r.child.pid ?? 0);
    const gadgetRun = `pid ${byName} in ${gadgets} \\(opkit run --cluster foo ${literal(QUIET.join(' '))}\\)`;
    const gizmoRun = `pid ${byKubeconfig} in ${gizmos} \\(opkit run --kubeconfig ${literal(kubeconfig)} ${literal(QUIET.join(' '))}\\)`;

    const refused = opkit(['env', 'down', '--name', 'foo']);
    assert.equal(refused.code, 1, refused.out);
    assert.match(
      refused.out,
      new RegExp(
        `^opkit: cluster "foo" is in use by 2 live opkit runs: ${gadgetRun}; ${gizmoRun}; stop them first \\(Ctrl-C where they run, or kill ${byName} ${byKubeconfig}\\), or stop the cluster anyway with: opkit env down --name foo --force$`,
        'm',
      ),
    );
    const status = opkit(['env', 'status', '--name', 'foo']);
    assert.equal(status.code, 0, 'the cluster still runs');
    assert.match(status.out, new RegExp(`^ {2}used by opkit run ${gadgetRun}$`, 'm'), status.out);
    assert.match(status.out, new RegExp(`^ {2}used by opkit run ${gizmoRun}$`, 'm'), status.out);

    runs[1]?.child.kill('SIGINT');
    assert.equal(await runs[1]?.exited, 130, runs[1]?.log);
    const one = opkit(['env', 'down', '--name', 'foo']);
    assert.equal(one.code, 1, one.out);
    assert.match(
      one.out,
      new RegExp(`^opkit: cluster "foo" is in use by a live opkit run: ${gadgetRun}; stop it first`),
    );
    assert.doesNotMatch(one.out, new RegExp(`pid ${byKubeconfig}`), 'an ended run is not named');

    const forced = opkit(['env', 'down', '--name', 'foo', '--force']);
    assert.equal(forced.code, 0, forced.out);
    assert.match(
      forced.out,
      new RegExp(`^opkit: stopping cluster "foo" although a live opkit run uses it \\(--force\\): ${gadgetRun}$`, 'm'),
    );
    assert.match(forced.out, /^opkit: cluster "foo" stopped$/m);
    assert.equal(opkit(['env', 'status', '--name', 'foo']).code, 3);
  } finally {
    for (const r of runs) r.child.kill('SIGINT');
    await Promise.all(runs.map((r) => r.exited));
  }
});
