import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { connect, createServer, type Server } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '@opkit/runtime';
import { acrossWebhookResets, Service } from './service.ts';

/** A backend that answers every connection with its name, and a health server whose /readyz answers `ready()`. */
async function backend(name: string): Promise<{ port: number; healthPort: number; ready: boolean; close(): void }> {
  const state = { ready: true };
  const tcp: Server = createServer((s) => s.end(name));
  const health: HttpServer = createHttpServer((_req, res) => res.writeHead(state.ready ? 200 : 500).end());
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => health.listen(0, '127.0.0.1', r));
  const port = (s: Server | HttpServer) => (s.address() as { port: number }).port;
  return {
    port: port(tcp),
    healthPort: port(health),
    get ready() {
      return state.ready;
    },
    set ready(v: boolean) {
      state.ready = v;
    },
    close() {
      tcp.close();
      health.close();
    },
  };
}

/** What a connection through the Service reads: the backend's name, or `reset` when it is refused. */
function ask(port: number): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = connect({ host: '127.0.0.1', port });
    s.setEncoding('utf8').on('data', (c: string) => {
      got += c;
    });
    s.on('end', () => resolve(got));
    s.on('error', () => resolve('reset'));
  });
}

test('the Service routes new connections to ready endpoints in turn, drops a terminating one after its lag, and resets when none is ready', async () => {
  const a = await backend('a');
  const b = await backend('b');
  const svc = await Service.start();
  svc.add('a', a.port, a.healthPort);
  svc.add('b', b.port, b.healthPort);
  assert.equal(await ask(svc.port), 'reset', 'no endpoint has started yet');
  svc.started('a');
  svc.started('b');
  await svc.waitReady(2, 5_000);
  const answers = new Set([await ask(svc.port), await ask(svc.port)]);
  assert.deepEqual([...answers].sort(), ['a', 'b']);

  svc.terminating('a', 300);
  assert.deepEqual(svc.ready().sort(), ['a', 'b'], 'still routed to during the lag');
  await sleep(400);
  assert.deepEqual(svc.ready(), ['b']);
  assert.deepEqual([await ask(svc.port), await ask(svc.port)], ['b', 'b']);

  b.ready = false; // its readiness probe fails: no endpoint left
  await sleep(500);
  assert.deepEqual(svc.ready(), []);
  assert.equal(await ask(svc.port), 'reset');
  svc.exited('a');
  svc.started('a'); // a new process: routed to once its probe passes
  await svc.waitReady(1, 5_000);
  assert.equal(await ask(svc.port), 'a');

  await svc.down();
  assert.equal(await ask(svc.port), 'reset', 'down: refused');
  await svc.up();
  assert.equal(await ask(svc.port), 'a');
  assert.ok(svc.stats.reset >= 3);
  await svc.close();
  a.close();
  b.close();
});

test('a paused endpoint is not routed to and its open connections are reset; continued, it is routed to once probed', async () => {
  // a backend that keeps each connection open, and answers its name once asked
  const tcp: Server = createServer((s) => s.once('data', () => s.end('a')));
  const health: HttpServer = createHttpServer((_req, res) => res.writeHead(200).end());
  await new Promise<void>((r) => tcp.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => health.listen(0, '127.0.0.1', r));
  const port = (s: Server | HttpServer) => (s.address() as { port: number }).port;
  const svc = await Service.start();
  svc.add('a', port(tcp), port(health));
  svc.started('a');
  await svc.waitReady(1, 5_000);
  const open = connect({ host: '127.0.0.1', port: svc.port });
  const closed = new Promise<void>((r) => open.on('close', () => r()));
  open.on('error', () => {});
  await new Promise<void>((r) => open.once('connect', () => r()));
  await sleep(100);

  svc.paused('a', true);
  await Promise.race([closed, sleep(2_000).then(() => assert.fail('the open connection was not reset'))]);
  assert.deepEqual(svc.ready(), []);
  assert.equal(await ask(svc.port), 'reset', 'a paused endpoint is not routed to');

  svc.paused('a', false);
  await svc.waitReady(1, 5_000);
  const answer = await new Promise<string>((resolve) => {
    const s = connect({ host: '127.0.0.1', port: svc.port }, () => s.write('hi'));
    let got = '';
    s.setEncoding('utf8').on('data', (c: string) => {
      got += c;
    });
    s.on('end', () => resolve(got));
    s.on('error', () => resolve('reset'));
  });
  assert.equal(answer, 'a');
  await svc.close();
  tcp.close();
  health.close();
});

test('a harness write is sent again while a webhook connection reset fails it, and only then, 4 times at most', async () => {
  const reset = new ApiError(
    'InternalError',
    'conversion webhook for app.example.com/v1, Kind=AppService failed: Post "https://127.0.0.1:1/convert": write tcp: write: connection reset by peer',
    { status: 500 },
  );
  let calls = 0;
  const flaky = async () => {
    calls += 1;
    if (calls < 3) throw reset;
    return 'written';
  };
  assert.equal(await acrossWebhookResets(flaky), 'written');
  assert.equal(calls, 3);

  calls = 0;
  await assert.rejects(
    acrossWebhookResets(async () => {
      calls += 1;
      throw reset;
    }),
    (err) => err === reset,
  );
  assert.equal(calls, 4, 'gives up after 4 sends');

  calls = 0;
  const refused = new ApiError('Invalid', 'spec.replicas: Invalid value', { status: 422 });
  await assert.rejects(
    acrossWebhookResets(async () => {
      calls += 1;
      throw refused;
    }),
    (err) => err === refused,
  );
  assert.equal(calls, 1, 'any other failure is thrown at once');
});
