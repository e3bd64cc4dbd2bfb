import assert from 'node:assert/strict';
import { connect, createServer, type Server } from 'node:net';
import { after, before, test } from 'node:test';
import { type Endpoint, WebhookService } from './service.ts';

/** Two replicas' webhook servers on loopback: each answers a connection's first bytes with its name and echoes them. */
const servers: Server[] = [];
const endpoints: (Endpoint & { on: boolean })[] = [];

before(async () => {
  for (const name of ['r0', 'r1']) {
    const server = createServer((s) => s.on('data', (d) => s.write(`${name}:${d}`)).on('error', () => {}));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const endpoint = { port: typeof address === 'object' && address ? address.port : 0, on: true, up: () => false };
    endpoint.up = () => endpoint.on;
    servers.push(server);
    endpoints.push(endpoint);
  }
});

after(async () => {
  for (const s of servers) await new Promise((resolve) => s.close(resolve));
});

/** Sends `ping` on a new connection to the Service: what came back within 300 ms, and whether the Service closed it. */
function exchange(port: number) {
  return new Promise<{ answer: string; closed: boolean }>((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1');
    const done = (closed: boolean) => resolve({ answer, closed });
    const timer = setTimeout(() => {
      socket.destroy();
      done(false);
    }, 300);
    socket.on('data', (d) => (answer += d));
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      done(true);
    });
    socket.write('ping');
  });
}

test('each connection goes to the next replica up; a replica that is not up gets none', async () => {
  const service = await WebhookService.start(() => endpoints);
  try {
    const answers = [(await exchange(service.port)).answer, (await exchange(service.port)).answer].sort();
    assert.deepEqual(answers, ['r0:ping', 'r1:ping']);
    (endpoints[0] as { on: boolean }).on = false;
    assert.deepEqual(await exchange(service.port), { answer: 'r1:ping', closed: false });
    (endpoints[1] as { on: boolean }).on = false;
    assert.deepEqual(await exchange(service.port), { answer: '', closed: true }, 'none up: closed at once');
  } finally {
    for (const e of endpoints) e.on = true;
    await service.close();
  }
});

test('down(true) closes the open connections and every new one at once; down(false) brings the Service back', async () => {
  const service = await WebhookService.start(() => endpoints);
  try {
    const open = connect(service.port, '127.0.0.1');
    open.on('error', () => {});
    const openClosed = new Promise<void>((resolve) => open.once('close', () => resolve()));
    await new Promise<void>((resolve) => open.once('data', () => resolve()).write('hello'));
    service.down(true);
    await openClosed;
    assert.deepEqual(await exchange(service.port), { answer: '', closed: true }, 'down: a new connection is closed');
    service.down(true);
    assert.deepEqual(await exchange(service.port), { answer: '', closed: true }, 'down twice: still down');
    service.down(false);
    const back = await exchange(service.port);
    assert.equal(back.closed, false);
    assert.match(back.answer, /^r[01]:ping$/);
  } finally {
    await service.close();
  }
});
