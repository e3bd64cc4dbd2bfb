import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { CacheError } from '../cache/cache.ts';
import { ConfigMaps } from '../client/builtins.ts';
import { Client } from '../client/client.ts';
import { done } from '../controller/reconcile.ts';
import { UsageError } from '../errors.ts';
import { createLogger, silentLogger } from '../logger.ts';
import { selfSignedCertificate } from '../tls/issue.ts';
import { StaticCertificates } from '../tls/sources.ts';
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

/** Resolves once `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/** A runnable that needs `ms` to wind down once its signal aborts, noting when it has. */
function slowToStop(ms: number, order: string[]): Runnable {
  return {
    needLeaderElection: false,
    async start(signal) {
      await aborted(signal);
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

test('a metrics port in use: MetricsBindFailed, the certificate watcher is released, and the hooks still run', async () => {
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
    assert.equal(err.code, 'MetricsBindFailed');
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

test('an unreadable certificate directory fails the start with MetricsCertificateUnreadable, not MetricsBindFailed', async () => {
  const client = unreachableClient();
  const mgr = manager(client, { bindAddress: '127.0.0.1:0', certDir: '/nonexistent-opkit-certs' });
  await assert.rejects(mgr.start(new AbortController().signal), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'MetricsCertificateUnreadable');
    assert.match(err.message, /cannot read the metrics certificate \/nonexistent-opkit-certs\/tls\.crt: ENOENT/);
    return true;
  });
  client.close();
});

/** Resolves true when a TCP connection to `address` is accepted, false when refused. */
function accepts(address: string): Promise<boolean> {
  const at = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = connect({ host: address.slice(0, at), port: Number(address.slice(at + 1)) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function status(address: string | undefined, path: string): Promise<number> {
  return (await fetch(`http://${address}${path}`)).status;
}

test('a graceful stop in phases: readiness fails at once; controllers drain, then the caches, the webhook server and the HTTP servers stop', async () => {
  const client = unreachableClient();
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString());
      callback();
    },
  });
  const mgr = new Manager({
    name: 'phases',
    client,
    log: createLogger({ destination }),
    metrics: { bindAddress: '0' },
    health: { bindAddress: '127.0.0.1:0' },
    controllers: { gracefulShutdownTimeoutMs: 300 },
    webhook: { bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(selfSignedCertificate(['127.0.0.1'])) },
  });
  const webhook = mgr.webhookServer;
  const seen: string[] = [];
  // a controller that takes 900 ms to wind down: past the drain time (300 ms), within its 1 s margin
  mgr.add({
    async start(signal) {
      await aborted(signal);
      await new Promise((resolve) => setTimeout(resolve, 600));
      seen.push(`webhook ${(await accepts(webhook.address)) ? 'serves' : 'refuses'} while the controller drains`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      seen.push('controller returned');
    },
  });
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  let health = '';
  let webhookAt = '';
  try {
    for (let i = 0; i < 200; i++) {
      health = mgr.healthAddress ?? '';
      if (health && (await status(health, '/readyz').catch(() => 0)) === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(await status(health, '/readyz'), 200, 'ready before the stop');
    webhookAt = webhook.address;
    ctl.abort();
    const ready = await fetch(`http://${health}/readyz`);
    assert.equal(ready.status, 500, 'not ready from the moment the stop begins');
    assert.match(await ready.text(), /\[-\]shutdown failed: stopping/);
    assert.equal(await status(health, '/healthz'), 200, 'alive while stopping');
  } finally {
    ctl.abort();
    await running;
  }
  assert.deepEqual(seen, ['webhook serves while the controller drains', 'controller returned']);
  assert.equal(await accepts(webhookAt), false, 'the webhook server has stopped when start() resolves');
  assert.equal(await accepts(health), false, 'and so has the health server');
  const phases = lines
    .map((l) => (JSON.parse(l) as { msg: string }).msg)
    .filter((m) => m.startsWith('stopping') || m === 'stopped');
  assert.deepEqual(phases, [
    'stopping: draining in-flight work',
    'stopping: the caches',
    'stopping: the webhook server',
    'stopping: the HTTP servers',
    'stopped',
  ]);
  client.close();
});

test('a step of the stop that fails: the later steps still run, then start() rejects with StopFailed carrying it', async () => {
  const client = unreachableClient();
  const mgr = new Manager({
    name: 'failing-step',
    client,
    log: silentLogger,
    health: { bindAddress: '127.0.0.1:0' },
    metrics: { bindAddress: '0' },
  });
  const broken = new Error('the events could not be flushed');
  mgr.eventRecorder().flush = async () => {
    throw broken;
  };
  let hooked = false;
  mgr.onStopped(() => {
    hooked = true;
  });
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  for (let i = 0; i < 100 && !mgr.healthAddress; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  const health = mgr.healthAddress as string;
  ctl.abort();
  await assert.rejects(running, (err: Error & { code?: string }) => {
    assert.equal(err.code, 'StopFailed');
    assert.equal(err.cause, broken);
    assert.match(err.message, /stopping failed: the events could not be flushed/);
    return true;
  });
  assert.ok(hooked, 'the hooks ran');
  assert.equal(await accepts(health), false, 'the health server closed');
  client.close();
});

test('serving runnables: told to drain when a graceful stop begins, stopped only after the controllers returned', async () => {
  const client = unreachableClient();
  const order: string[] = [];
  const mgr = manager(client);
  mgr.add({
    serves: true,
    drain: () => order.push('server drains'),
    async start(signal) {
      await aborted(signal);
      order.push('server stops');
    },
  });
  mgr.add({
    async start(signal) {
      await aborted(signal);
      order.push('controller stops');
      await new Promise((resolve) => setTimeout(resolve, 100));
      order.push('controller returned');
    },
  });
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  setTimeout(() => ctl.abort(), 50);
  await running;
  assert.deepEqual(order, ['server drains', 'controller stops', 'controller returned', 'server stops']);
  client.close();
});

/**
 * Adds a serving runnable, `middle`, and a controller that returns 100 ms after the stop (each noting its end in
 * `order`), starts `mgr` and begins a graceful stop 50 ms later; the manager's start.
 */
function stopInPhases(mgr: Manager, order: string[], middle: Runnable): Promise<void> {
  mgr.add({
    serves: true,
    async start(signal) {
      await aborted(signal);
      order.push('server stops');
    },
  });
  mgr.add(middle);
  mgr.add({
    async start(signal) {
      await aborted(signal);
      await delay(100);
      order.push('controller returned');
    },
  });
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  setTimeout(() => ctl.abort(), 50);
  return running;
}

test("a runnable that rejects with its signal's abort once a graceful stop began ends normally: nothing is cut, start() resolves", async () => {
  const client = unreachableClient();
  const order: string[] = [];
  const mgr = manager(client);
  // the common idiom: a timer or request under the runnable's signal rejects with AbortError at the stop
  const running = stopInPhases(mgr, order, { start: (signal) => delay(60_000, undefined, { signal }) });
  await running;
  assert.deepEqual(order, ['controller returned', 'server stops']);
  client.close();
});

test('a runnable that fails otherwise once a graceful stop began: the stop still goes in phases, then rejects with StopFailed', async () => {
  const client = unreachableClient();
  const order: string[] = [];
  const mgr = manager(client);
  const running = stopInPhases(mgr, order, {
    async start(signal) {
      await aborted(signal);
      throw new Error('the flush of the runnable failed');
    },
  });
  await assert.rejects(running, (err: Error & { code?: string; cause?: unknown }) => {
    assert.equal(err.code, 'StopFailed');
    assert.match(String((err.cause as Error | undefined)?.message), /the flush of the runnable failed/);
    return true;
  });
  assert.deepEqual(order, ['controller returned', 'server stops']);
  client.close();
});

test('nothing to drain (a standby): the webhook server still accepts calls for the drain time after the stop began', async () => {
  const client = unreachableClient();
  const mgr = new Manager({
    name: 'standby',
    client,
    log: silentLogger,
    metrics: { bindAddress: '0' },
    health: { bindAddress: '0' },
    controllers: { gracefulShutdownTimeoutMs: 600 },
    webhook: { bindAddress: '127.0.0.1:0', certificates: new StaticCertificates(selfSignedCertificate(['127.0.0.1'])) },
  });
  const webhook = mgr.webhookServer;
  const ctl = new AbortController();
  const running = mgr.start(ctl.signal);
  for (let i = 0; i < 200 && !webhook.address.endsWith(`:${webhook.port}`); i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  for (let i = 0; i < 200 && !(await accepts(webhook.address)); i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const at = webhook.address;
  const t0 = performance.now();
  ctl.abort();
  await new Promise((resolve) => setTimeout(resolve, 400));
  assert.equal(await accepts(at), true, 'still accepting 400 ms into the stop');
  await running;
  assert.ok(performance.now() - t0 >= 590, 'the stop waited the drain time');
  assert.equal(await accepts(at), false);
  client.close();
});

test('misuse is a UsageError: start() twice (AlreadyStarted), add() after start (AlreadyStarted), a duplicate check (InvalidArgument)', async () => {
  const client = unreachableClient();
  const mgr = manager(client);
  assert.throws(
    () => mgr.addHealthzCheck('ping', () => {}),
    (err: unknown) => err instanceof UsageError && err.code === 'InvalidArgument',
  );
  const ctl = new AbortController();
  ctl.abort();
  await mgr.start(ctl.signal);
  await assert.rejects(
    mgr.start(ctl.signal),
    (err: unknown) => err instanceof UsageError && err.code === 'AlreadyStarted',
  );
  assert.throws(
    () => mgr.add({ start: async () => {} }),
    (err: unknown) => err instanceof UsageError && err.code === 'AlreadyStarted',
  );
  client.close();
});

test('a runnable whose caches never synced: start() rejects with its CacheError CacheSyncTimeout, as it is', async () => {
  const client = unreachableClient();
  const mgr = manager(client);
  const timeout = new CacheError('CacheSyncTimeout', 'controller x: caches did not sync within 1 s (configmaps)');
  mgr.add({
    needLeaderElection: false,
    start: async () => {
      throw timeout;
    },
  });
  await assert.rejects(mgr.start(new AbortController().signal), (err: unknown) => err === timeout);
  client.close();
});

test('sharding settings are checked when the manager is made: the key, and the timings as for leader election', () => {
  const made = (sharding: Record<string, unknown>) => () =>
    new Manager({
      name: 'shards',
      client: unreachableClient(),
      log: silentLogger,
      sharding: { enabled: true, ...sharding },
    });
  assert.throws(made({ key: 'uid' }), { name: 'UsageError', message: /sharding\.key: "uid" is not name or namespace/ });
  assert.throws(made({ leaseDurationMs: Number.NaN }), {
    message: /sharding: leaseDuration must be a number of milliseconds, got NaN/,
  });
  assert.throws(made({ retryPeriodMs: 0 }), { message: /sharding: retryPeriod must be positive, got 0 ms/ });
  assert.throws(made({ leaseDurationMs: 1_000, renewDeadlineMs: 2_000 }), {
    message: /leaseDuration \(1000 ms\) must be longer than renewDeadline \(2000 ms\)/,
  });
  const ok = made({ key: 'namespace', retryPeriodMs: 500, renewDeadlineMs: 3_000, leaseDurationMs: 4_000 })();
  assert.equal(ok.shards?.length, 0, 'holds no shard before start');
});
