import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeObject } from '@opkit/runtime';
import {
  decide,
  liveness,
  newRunOwner,
  ownerOf,
  RUN_ID,
  type RunOwner,
  refusalMessage,
  thisHost,
  type Vantage,
  withOwner,
} from './run-owner.ts';

const here: Vantage = { host: 'dev-laptop', alive: (pid) => pid === 4242 };
const me = newRunOwner('run-me', new Date('2026-01-02T03:04:05Z'), here);
const other = (pid: number, host = 'dev-laptop'): RunOwner => ({
  id: 'run-other',
  pid,
  host,
  started: '2026-01-01T00:00:00.000Z',
});
const configuration: KubeObject = {
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingWebhookConfiguration',
  metadata: { name: 'gadget-operator-validating-webhook-configuration' },
};
const crd: KubeObject = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.toys.example.org' },
};
const stored = (obj: KubeObject, owner?: RunOwner): KubeObject => {
  const o = owner ? withOwner(obj, owner) : obj;
  return { ...o, metadata: { ...o.metadata, resourceVersion: '17' } };
};

test('a run is named by its id, pid, host and start, and read back from the annotations', () => {
  assert.deepEqual(me, { id: 'run-me', pid: process.pid, host: 'dev-laptop', started: '2026-01-02T03:04:05.000Z' });
  const annotated = withOwner(
    { ...configuration, metadata: { ...configuration.metadata, annotations: { a: 'b' } } },
    me,
  );
  assert.equal(annotated.metadata.annotations?.a, 'b', 'other annotations are kept');
  assert.equal(annotated.metadata.annotations?.[RUN_ID], 'run-me');
  assert.deepEqual(ownerOf(annotated), me);
  assert.equal(ownerOf(configuration), undefined);
});

test('an owner is alive when its pid answers on this host; on another host it cannot be checked', () => {
  assert.equal(liveness(other(4242), here), 'alive');
  assert.equal(liveness(other(999), here), 'ended');
  assert.equal(liveness(other(4242, 'ci-runner'), here), 'unknown');
});

test('this host: this process is alive, an exited child is not', async () => {
  assert.equal(thisHost.alive(process.pid), true);
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  assert.equal(thisHost.alive(child.pid ?? 0), false);
});

test('a run killed but not yet reaped (a zombie) has ended', { skip: process.platform !== 'linux' }, async () => {
  // sh starts a child that exits only after sh has become `sleep`, which never reaps it: the child stays a zombie (a
  // child that exited at once could be reaped by sh itself before its exec)
  const parent = spawn('sh', ['-c', 'sleep 0.5 & echo $!; exec sleep 30'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    const [line] = (await once(parent.stdout, 'data')) as [Buffer];
    const zombie = Number(line.toString().trim());
    const state = () => {
      const stat = readFileSync(`/proc/${zombie}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    };
    for (let i = 0; i < 500 && state() !== 'Z'; i++) await sleep(10);
    assert.equal(state(), 'Z', 'the child is a zombie');
    assert.equal(thisHost.alive(zombie), false);
    assert.equal(liveness({ ...other(zombie), host: thisHost.host }, thisHost), 'ended');
  } finally {
    parent.kill('SIGKILL');
  }
});

test('absent objects are created; ones of an ended run, of this run and CRDs no run owns are taken over', () => {
  assert.deepEqual(decide(configuration, undefined, me, here), { action: 'create' });
  assert.deepEqual(decide(configuration, stored(configuration, other(999)), me, here), {
    action: 'replace',
    resourceVersion: '17',
    previous: other(999),
  });
  assert.equal(decide(configuration, stored(configuration, me), me, here).action, 'replace');
  assert.deepEqual(decide(crd, stored(crd), me, here), {
    action: 'replace',
    resourceVersion: '17',
    previous: undefined,
  });
});

test('a live run’s objects, a deployment’s configurations and a run elsewhere are refused, saying what to do', () => {
  const alive = decide(configuration, stored(configuration, other(4242)), me, here);
  assert.equal(alive.action, 'refuse');
  const aliveText = alive.action === 'refuse' ? refusalMessage([alive]) : '';
  assert.match(aliveText, /^ValidatingWebhookConfiguration gadget-operator-validating-webhook-configuration belongs/);
  assert.match(
    aliveText,
    /another opkit run \(pid 4242 on this machine, started 2026-01-01T00:00:00\.000Z, run run-other\)/,
  );
  assert.match(
    aliveText,
    /stop that run first \(Ctrl-C where it runs, or kill 4242\), then run again; nothing was written/,
  );

  const deployed = decide(configuration, stored(configuration), me, here);
  const deployedText = deployed.action === 'refuse' ? refusalMessage([deployed]) : '';
  assert.match(deployedText, /exists and no opkit run wrote it \(opkit deploy, helm or kubectl did\)/);
  assert.match(
    deployedText,
    /opkit undeploy, or kubectl delete validatingwebhookconfiguration gadget-operator-validating-webhook-configuration/,
  );

  const elsewhere = decide(crd, stored(crd, other(4242, 'ci-runner')), me, here);
  const elsewhereText = elsewhere.action === 'refuse' ? refusalMessage([elsewhere]) : '';
  assert.match(
    elsewhereText,
    /^the conversion webhook of CustomResourceDefinition gadgets\.toys\.example\.org belongs/,
  );
  assert.match(elsewhereText, /an opkit run on ci-runner \(pid 4242, .*\), which cannot be checked from here/);
  assert.match(
    elsewhereText,
    /kubectl annotate customresourcedefinition gadgets\.toys\.example\.org opkit\.dev\/run-id- /,
  );
});

test('refusals for the same reason are one sentence naming every object', () => {
  const mutating = { ...configuration, kind: 'MutatingWebhookConfiguration', metadata: { name: 'm' } };
  const refusals = [mutating, configuration].map((c) => decide(c, stored(c, other(4242)), me, here));
  const text = refusalMessage(refusals.flatMap((r) => (r.action === 'refuse' ? [r] : [])));
  assert.match(
    text,
    /^MutatingWebhookConfiguration m and ValidatingWebhookConfiguration gadget-operator-validating-webhook-configuration belong to another opkit run/,
  );
  assert.equal(text.match(/stop that run first/g)?.length, 1);
});
