import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebhookService } from './service.ts';

const portOf = (s: Server | HttpServer) => (s.address() as { port: number }).port;

/**
 * A replica's webhook server on loopback: it answers a connection's first bytes with its name (`a:ping`) and keeps the
 * connection open; with `health`, a health server whose /readyz answers 200 while `ready`.
 */
async function backend(name: string, health = true) {
  const state = { ready: true };
  const tcp: Server = createServer((s) => s.on('data', (d) => s.write(`${name}:${d}`)).on('error', () => {}));
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  let probe: HttpServer | undefined;
  if (health) {
    probe = createHttpServer((_req, res) => res.writeHead(state.ready ? 200 : 500).end());
    await new Promise<void>((r) => probe?.listen(0, '127.0.0.1', r));
  }
  return {
    state,
    spec: { name, port: portOf(tcp), ...(probe ? { healthPort: portOf(probe) } : {}) },
    close: () => {
      tcp.close();
      probe?.close();
    },
  };
}

/** Sends `ping` on a new connection to the Service: what came back within 300 ms, or `reset` when it was refused. */
function ask(port: number): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = connect({ host: '127.0.0.1', port }, () => s.write('ping'));
    const timer = setTimeout(() => {
      s.destroy();
      resolve(got);
    }, 300);
    s.setEncoding('utf8').on('data', (c: string) => {
      got += c;
    });
    s.on('error', () => {
      clearTimeout(timer);
      resolve('reset');
    });
  });
}

test('new connections go to ready endpoints in turn; a terminating one leaves after its lag; none ready: reset', async () => {
  const a = await backend('a');
  const b = await backend('b');
  const svc = await WebhookService.start();
  try {
    svc.add(a.spec);
    svc.add(b.spec);
    assert.throws(() => svc.add(a.spec), { code: 'ChaosInput' });
    assert.equal(await ask(svc.port), 'reset', 'no endpoint has started yet');
    const ea = svc.events('a');
    const eb = svc.events('b');
    ea.started();
    eb.started();
    await svc.waitReady(2, 5_000);
    assert.deepEqual([await ask(svc.port), await ask(svc.port)].sort(), ['a:ping', 'b:ping']);

    ea.terminating(300);
    assert.deepEqual(svc.ready().sort(), ['a', 'b'], 'still routed to during the lag');
    await sleep(400);
    assert.deepEqual(svc.ready(), ['b']);
    assert.deepEqual([await ask(svc.port), await ask(svc.port)], ['b:ping', 'b:ping']);

    b.state.ready = false; // its readiness probe fails: no endpoint left
    await sleep(500);
    assert.deepEqual(svc.ready(), []);
    assert.equal(await ask(svc.port), 'reset');
    ea.exited();
    ea.started(); // a new process: routed to once its probe passes
    await svc.waitReady(1, 5_000);
    assert.equal(await ask(svc.port), 'a:ping');
    await assert.rejects(svc.waitReady(2, 300), { code: 'WaitTimeout' });
    assert.equal(svc.stats.routed.a, 2);
    assert.ok(svc.stats.resets.some((r) => r.why === 'no endpoint'));
  } finally {
    await svc.close();
    a.close();
    b.close();
  }
});

test('without a health port, readiness is a TCP connect to the webhook port', async () => {
  const a = await backend('a', false);
  const svc = await WebhookService.start();
  try {
    svc.add(a.spec);
    svc.add({ name: 'gone', port: a.spec.port + 1 === 65536 ? 1 : a.spec.port + 1 });
    svc.events('a').started();
    svc.events('gone').started(); // runs, but nothing listens on its port: never ready
    await svc.waitReady(1, 5_000);
    await sleep(500);
    assert.deepEqual(svc.ready(), ['a']);
    assert.deepEqual([await ask(svc.port), await ask(svc.port)], ['a:ping', 'a:ping']);
  } finally {
    await svc.close();
    a.close();
  }
});

test('a paused endpoint is not routed to and its open connections are reset; continued, it is routed to once probed', async () => {
  const a = await backend('a');
  const svc = await WebhookService.start();
  try {
    svc.add(a.spec);
    const events = svc.events('a');
    events.started();
    await svc.waitReady(1, 5_000);
    const open = connect({ host: '127.0.0.1', port: svc.port });
    const closed = new Promise<void>((r) => open.on('close', () => r()));
    open.on('error', () => {});
    await new Promise<void>((r) => open.once('data', () => r()).write('hello'));

    events.paused(true);
    await Promise.race([closed, sleep(2_000).then(() => assert.fail('the open connection was not reset'))]);
    assert.deepEqual(svc.ready(), []);
    assert.equal(await ask(svc.port), 'reset', 'a paused endpoint is not routed to');

    events.paused(false);
    await svc.waitReady(1, 5_000);
    assert.equal(await ask(svc.port), 'a:ping');
  } finally {
    await svc.close();
    a.close();
  }
});

test('down(true) resets the open connections and refuses new ones; down(false) brings the Service back', async () => {
  const a = await backend('a');
  const svc = await WebhookService.start();
  try {
    svc.add(a.spec);
    svc.events('a').started();
    await svc.waitReady(1, 5_000);
    const open = connect(svc.port, '127.0.0.1');
    open.on('error', () => {});
    const openClosed = new Promise<void>((resolve) => open.once('close', () => resolve()));
    await new Promise<void>((resolve) => open.once('data', () => resolve()).write('hello'));
    svc.down(true);
    await openClosed;
    assert.equal(await ask(svc.port), 'reset', 'down: a new connection is refused');
    svc.down(true);
    assert.equal(await ask(svc.port), 'reset', 'down twice: still down');
    svc.down(false);
    assert.equal(await ask(svc.port), 'a:ping');
    assert.ok(svc.stats.resets.filter((r) => r.why === 'down').length >= 2);
  } finally {
    await svc.close();
    a.close();
  }
});
