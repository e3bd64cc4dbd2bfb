import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Component, exitFailure } from './component.ts';
import { isTestenvError } from './errors.ts';
import { listensOn } from './listeners.ts';

test('a component that could not bind its port failed as PortInUse, any other early exit as ComponentFailed', () => {
  const etcd = '{"level":"fatal","msg":"listen tcp 127.0.0.1:2379: bind: address already in use"}\nexit status 1';
  assert.equal(exitFailure(etcd), 'PortInUse');
  assert.equal(
    exitFailure('E1201 failed to listen on 127.0.0.1:6443: listen tcp: bind: address already in use'),
    'PortInUse',
  );
  assert.equal(exitFailure('Error: unknown flag: --bogus'), 'ComponentFailed');
  assert.equal(exitFailure(''), 'ComponentFailed');
});

test('a probe answered by the process that took the port does not count: the component fails as PortInUse', async (t) => {
  if ((await listensOn(process.pid, 1)) === undefined) return t.skip('no /proc here');
  const dir = await mkdtemp(join(tmpdir(), 'opkit-component-'));
  const thief = createServer().listen(0, '127.0.0.1'); // another environment's component, on "our" port
  await once(thief, 'listening');
  const port = (thief.address() as { port: number }).port;
  try {
    const c = new Component({
      name: 'kube-controller-manager',
      binary: process.execPath,
      args: [
        '-e',
        `require('net').createServer().listen(${port}, '127.0.0.1').on('error', (e) => { console.error(e.message); setTimeout(() => process.exit(1), 300); })`,
      ],
      logFile: join(dir, 'kcm.log'),
      probe: async () => true, // the thief answers the probe, as another kube-controller-manager's /healthz would
      port,
      startTimeoutMs: 10_000,
    });
    await assert.rejects(c.start(), (err: unknown) => isTestenvError(err, 'PortInUse'));
  } finally {
    thief.close();
    await rm(dir, { recursive: true, force: true });
  }
});
