/**
 * Stopping `opkit run` as a user does, on a real control plane, with an operator whose reconcile takes 3 s: Ctrl-C
 * (SIGINT to the whole foreground process group, as a terminal sends it) reaches the operator once, so it drains as
 * on SIGTERM and the reconcile under way completes; and an `opkit run` killed with SIGKILL does not leave its operator
 * running: the operator is told to stop and drains.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { type Environment, start, waitFor } from '@opkit/testenv';
import {
  type OpkitRun,
  operatorsOf,
  running,
  scaffoldProject,
  startOpkitRun,
  untilLogged,
} from './fixtures/project.ts';

let cluster: Environment;
let work: string;
let project: string;
let childEnv: NodeJS.ProcessEnv;

/** The scaffolded reconcile, made slow and talkative: `reconcile started NAME`, 3 s, the status, `reconcile finished NAME`. */
async function slowReconcile(dir: string): Promise<void> {
  const file = join(dir, 'src/controllers/widget.ts');
  const text = await readFile(file, 'utf8');
  const slow = text
    .replace(
      '  await ctx.status(',
      "  process.stderr.write('reconcile started ' + obj.metadata.name + '\\n');\n" +
        '  await new Promise((resolve) => setTimeout(resolve, 3_000));\n' +
        '  await ctx.status(',
    )
    .replace(
      '  return done();\n}',
      "  process.stderr.write('reconcile finished ' + obj.metadata.name + '\\n');\n  return done();\n}",
    );
  assert.notEqual(slow, text, 'the scaffolded reconcile has the expected shape');
  await writeFile(file, slow);
}

function kubectl(args: string[], input?: string) {
  const r = spawnSync(cluster.binaries.kubectl ?? 'kubectl', ['--kubeconfig', cluster.kubeconfigPath, ...args], {
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

/** `opkit run` of the project, as the leader of a process group of its own (as a shell starts a foreground job). */
function startRun(): OpkitRun {
  const args = ['--kubeconfig', cluster.kubeconfigPath, '--', '--metrics-bind-address', '0'];
  const operatorFlags = ['--health-probe-bind-address', '0', '--graceful-shutdown-timeout', '30s'];
  return startOpkitRun(project, [...args, ...operatorFlags], childEnv, { detached: true });
}

const count = (log: string, re: RegExp) => (log.match(new RegExp(re, 'gm')) ?? []).length;

/** The run's exit code; fails with its output when it has not exited within `ms`. */
async function exitWithin(run: OpkitRun, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`opkit run still runs ${ms} ms later\n${run.log.slice(-3_000)}`)), ms);
  });
  try {
    return await Promise.race([run.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The operator process of a run. */
async function operatorOf(run: OpkitRun): Promise<number> {
  const [pid] = await operatorsOf(run.pid, project);
  if (pid === undefined) throw new Error(`no operator process under opkit run ${run.pid}\n${run.log.slice(-2_000)}`);
  return pid;
}

/** Ends whatever a test left running: the run's process group and the operator's. */
function killAll(run: OpkitRun, operator: number | undefined): void {
  for (const pid of [run.pid, operator ?? 0].filter((p) => p > 0)) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

before(async () => {
  cluster = await start({ nodes: 0, log: () => {} });
  work = await mkdtemp(join(tmpdir(), 'opkit-run-interrupt-'));
  const { KUBECONFIG: _unset, ...rest } = process.env;
  childEnv = { ...rest, OPKIT_STATE_DIR: join(work, 'state') };
  project = scaffoldProject(work, 'slow-operator', 'Widget', { env: childEnv });
  await slowReconcile(project);
});

after(async () => {
  await cluster?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

test('Ctrl-C (SIGINT to the process group, as a terminal sends it) reaches the operator once: it drains and the reconcile under way completes', {
  timeout: 180_000,
}, async () => {
  const run = startRun();
  let operator: number | undefined;
  let code: number | null;
  try {
    await untilLogged(run, /^opkit: applied 1 CRD/m);
    const widget = {
      apiVersion: 'toys.example.org/v1',
      kind: 'Widget',
      metadata: { name: 'w1', namespace: 'default' },
      spec: {},
    };
    const created = kubectl(['create', '-f', '-'], JSON.stringify(widget));
    assert.equal(created.code, 0, created.out);
    await untilLogged(run, /^reconcile started w1$/m);
    operator = await operatorOf(run);
    process.kill(-run.pid, 'SIGINT'); // what the terminal does on Ctrl-C: the whole foreground process group
    code = await exitWithin(run, 60_000);
  } finally {
    killAll(run, operator);
  }
  assert.doesNotMatch(run.log, /second signal/, run.log);
  assert.equal(count(run.log, /shutdown requested/), 1, run.log);
  assert.equal(code, 130, run.log);
  assert.equal(
    count(run.log, /^reconcile finished /),
    count(run.log, /^reconcile started /),
    `every reconcile that started finished:\n${run.log}`,
  );
  const ready = kubectl(['get', 'widget', 'w1', '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
  assert.equal(ready.out, 'True', 'the reconcile under way at Ctrl-C wrote its status');
  assert.equal(await running(operator ?? 0), false, 'the operator has ended');
});

test('opkit run killed with SIGKILL does not leave its operator running: the operator drains as on SIGTERM and ends', {
  timeout: 180_000,
}, async () => {
  const run = startRun();
  let operator: number | undefined;
  try {
    await untilLogged(run, /^reconcile started w1$/m); // w1 of the test above, reconciled again at start
    operator = await operatorOf(run);
    const pid = operator;
    process.kill(run.pid, 'SIGKILL'); // opkit run alone: it cannot pass anything on
    await waitFor('the operator of the killed opkit run to end', async () => !(await running(pid)), 60_000, 100).catch(
      (err: Error) => {
        throw new Error(`${err.message}\n${run.log.slice(-3_000)}`);
      },
    );
  } finally {
    killAll(run, operator);
  }
  assert.equal(count(run.log, /shutdown requested/), 1, run.log);
  assert.doesNotMatch(run.log, /second signal/, run.log);
  assert.equal(
    count(run.log, /^reconcile finished /),
    count(run.log, /^reconcile started /),
    `every reconcile that started finished:\n${run.log}`,
  );
});
