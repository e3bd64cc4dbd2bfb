/**
 * `opkit run` on a project with webhooks (the AppService operator): the local operator serves them, the apiserver
 * calls it through the generated configurations pointed at loopback (annotated with the run, as is the CRD whose
 * conversion it serves), and the configurations and the run's annotations go away with the run.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Environment, start, waitFor } from '@opkit/testenv';

const MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const OPERATOR = fileURLToPath(new URL('../../../operators/appservice', import.meta.url));

let env: Environment;

function kubectl(args: string[], input?: string) {
  const r = spawnSync(env.binaries.kubectl ?? 'kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], {
    encoding: 'utf8',
    ...(input !== undefined ? { input } : {}),
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

before(async () => {
  env = await start({ nodes: 1, log: () => {} });
});

after(async () => {
  await env?.stop();
});

test('opkit run serves the project webhooks locally and removes their configurations when it ends', async () => {
  const run = spawn(
    process.execPath,
    [
      MAIN,
      'run',
      '--dir',
      OPERATOR,
      '--kubeconfig',
      env.kubeconfigPath,
      '--',
      '--metrics-bind-address',
      '0',
      '--health-probe-bind-address',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  run.stdout.setEncoding('utf8').on('data', (c: string) => {
    log += c;
  });
  run.stderr.setEncoding('utf8').on('data', (c: string) => {
    log += c;
  });
  const exited = new Promise<number | null>((resolve) => run.once('exit', (code) => resolve(code)));
  try {
    const app = JSON.stringify({
      apiVersion: 'app.example.com/v1',
      kind: 'AppService',
      metadata: { name: 'local', namespace: 'default' },
      spec: { replicas: 4, template: { image: 'nginx:1.27' } },
    });
    await waitFor(
      'the locally run operator to default a v1 AppService',
      async () => kubectl(['apply', '-f', '-'], app).code === 0,
      90_000,
      500,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${log.slice(-3_000)}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 200)); // let the output spawnSync held back arrive
    assert.match(log, /and 2 webhook configuration\(s\), served at https:\/\/127\.0\.0\.1:\d+/);
    const rollout = kubectl([
      'get',
      'appservices.v1.app.example.com',
      'local',
      '-o',
      'jsonpath={.spec.rollout.maxUnavailable}',
    ]);
    assert.equal(rollout.out, '1', 'defaulted by the webhook the local operator serves');
    const alpha = kubectl(['get', 'appservices.v1alpha1.app.example.com', 'local', '-o', 'jsonpath={.spec.image}']);
    assert.match(alpha.out, /^nginx:1\.27/, 'converted by the local operator');
    const owner = kubectl([
      'get',
      'crd',
      'appservices.app.example.com',
      '-o',
      'jsonpath={.metadata.annotations.opkit\\.dev/run-pid}',
    ]);
    assert.equal(owner.out, String(run.pid), 'the CRD’s conversion names the run that points it at itself');
  } finally {
    run.kill('SIGINT');
  }
  assert.equal(await exited, 130);
  assert.match(log, /removed the 2 webhook configuration\(s\) of this run/);
  const left = kubectl(['get', 'mutatingwebhookconfigurations,validatingwebhookconfigurations', '-o', 'name']);
  assert.doesNotMatch(left.out, /appservice-operator/);
  const annotations = kubectl(['get', 'crd', 'appservices.app.example.com', '-o', 'jsonpath={.metadata.annotations}']);
  assert.doesNotMatch(annotations.out, /opkit\.dev\/run-/, 'the run’s ownership of the conversion ends with it');
});
