import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { ConfigMaps } from '../client/builtins.ts';
import { Client } from '../client/client.ts';
import { done } from '../controller/reconcile.ts';
import { createLogger, silentLogger } from '../logger.ts';
import { selfSignedCertificate } from '../tls/issue.ts';
import { Manager, type ManagerOptions, type Runnable } from './manager.ts';

test('a stop while the apiserver is still being reached resolves start() (a graceful stop, not a failure)', async () => {
  // nothing listens on port 1: discovery keeps retrying until the stop
  const client = new Client({
    server: 'http://127.0.0.1:1',
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
  const mgr = new Manager({
    name: 'stop-early',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
  });
  mgr
    .controller()
    .for(ConfigMaps)
    .complete(async () => done());
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  setTimeout(() => ctl.abort(), 300);
  const t0 = performance.now();
  await running; // rejected with the string 'stopped' before
  assert.ok(performance.now() - t0 < 5_000, 'the retry wait is cut short by the stop');
  client.close();
});

function unreachableClient(): Client {
  return new Client({
    server: 'http://127.0.0.1:1',
    auth: { credentials: async () => ({ headers: {} }), invalidate() {} },
    namespace: 'default',
    contextName: 'test',
  });
}

function manager(client: Client, metrics: ManagerOptions['metrics'] = { bindAddress: '0' }): Manager {
  return new Manager({ name: 'hooks', client, log: silentLogger, metrics, health: { bindAddress: '0' } });
}

/** A runnable that needs `ms` to wind down once its signal aborts, noting when it has. */
function slowToStop(ms: number, order: string[]): Runnable {
  return {
    needLeaderElection: false,
    async start(signal) {
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      await new Promise((resolve) => setTimeout(resolve, ms));
      order.push('runnable returned');
    },
  };
}

test('onStopped hooks run after the runnables drained, before start() resolves — and after a fatal error', async () => {
  const client = unreachableClient();
  const order: string[] = [];
  const graceful = manager(client);
  graceful.add(slowToStop(150, order));
  graceful.onStopped(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    order.push('hook');
  });
  const ctl = new AbortController();
  const running = graceful.start(ctl.signal);
  setTimeout(() => ctl.abort(), 50);
  await running;
  order.push('start resolved');
  assert.deepEqual(order, ['runnable returned', 'hook', 'start resolved']);

  order.length = 0;
  const failing = manager(client);
  failing.add(slowToStop(150, order));
  failing.add({
    needLeaderElection: false,
    start: async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      throw new Error('boom');
    },
  });
  failing.onStopped(() => {
    throw new Error('a failing hook does not stop the next one');
  });
  failing.onStopped(() => {
    order.push('hook');
  });
  await assert.rejects(failing.start(new AbortController().signal), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'RunnableFailed');
    return true;
  });
  assert.deepEqual(order, ['runnable returned', 'hook'], 'the fatal path waits for the cut-off runnables, then hooks');
  client.close();
});

test('a hook that hangs is left behind after its timeout', async () => {
  const client = unreachableClient();
  const mgr = manager(client);
  mgr.onStopped(() => new Promise(() => {}), { timeoutMs: 100 });
  const ctl = new AbortController();
  ctl.abort();
  const t0 = performance.now();
  await mgr.start(ctl.signal);
  assert.ok(performance.now() - t0 < 2_000);
  client.close();
});

test('a metrics port in use: BindFailed, the certificate watcher is released, and the hooks still run', async () => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const port = (busy.address() as AddressInfo).port;
  const dir = await mkdtemp(join(tmpdir(), 'opkit-certs-'));
  const pair = selfSignedCertificate();
  await writeFile(join(dir, 'tls.crt'), pair.certPem);
  await writeFile(join(dir, 'tls.key'), pair.keyPem);
  const client = unreachableClient();
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  const mgr = new Manager({
    name: 'hooks',
    client,
    log: createLogger({ destination }),
    metrics: { bindAddress: `127.0.0.1:${port}`, certDir: dir },
    health: { bindAddress: '0' },
  });
  let hooked = false;
  mgr.onStopped(() => {
    hooked = true;
  });
  await assert.rejects(mgr.start(new AbortController().signal), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'BindFailed');
    return true;
  });
  assert.ok(hooked);
  // a certificate written after the failed start is not picked up: nothing watches the directory any more
  const next = selfSignedCertificate();
  await writeFile(join(dir, 'tls.crt'), next.certPem);
  await writeFile(join(dir, 'tls.key'), next.keyPem);
  await new Promise((resolve) => setTimeout(resolve, 500));
  assert.deepEqual(
    lines.filter((l) => l.includes('certificate reloaded')),
    [],
  );
  busy.close();
  client.close();
  await rm(dir, { recursive: true, force: true });
});

test('an unreadable certificate directory fails the start with CertificateUnreadable, not BindFailed', async () => {
  const client = unreachableClient();
  const mgr = manager(client, { bindAddress: '127.0.0.1:0', certDir: '/nonexistent-opkit-certs' });
  await assert.rejects(mgr.start(new AbortController().signal), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'CertificateUnreadable');
    assert.match(err.message, /cannot read the metrics certificate \/nonexistent-opkit-certs\/tls\.crt: ENOENT/);
    return true;
  });
  client.close();
});
