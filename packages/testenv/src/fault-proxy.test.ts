import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { isTestenvError } from './errors.ts';
import { FaultProxy, targetOf } from './fault-proxy.ts';

/** A TCP echo server on 127.0.0.1 that records what it saw end, so tests can tell whether a close got through. */
interface Echo {
  readonly port: number;
  readonly ends: () => number;
  readonly close: () => Promise<void>;
}

async function startEcho(): Promise<Echo> {
  const sockets = new Set<Socket>();
  let ends = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('end', () => {
      ends += 1;
    });
    socket.on('close', () => sockets.delete(socket));
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return {
    port: address.port,
    ends: () => ends,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

interface Outcome {
  readonly hadError: boolean;
  readonly ended: boolean;
  readonly error: NodeJS.ErrnoException | undefined;
}

interface Client {
  readonly socket: Socket;
  readonly text: () => string;
  readonly isClosed: () => boolean;
  readonly closed: Promise<Outcome>;
  readonly waitFor: (expected: string, timeoutMs?: number) => Promise<void>;
}

async function open(port: number): Promise<Client> {
  const socket = connect({ host: '127.0.0.1', port });
  socket.setNoDelay(true);
  let text = '';
  let ended = false;
  let error: NodeJS.ErrnoException | undefined;
  let isClosed = false;
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  socket.on('end', () => {
    ended = true;
  });
  socket.on('error', (err: NodeJS.ErrnoException) => {
    error = err;
  });
  const closed = new Promise<Outcome>((resolve) => {
    socket.on('close', (hadError) => {
      isClosed = true;
      resolve({ hadError, ended, error });
    });
  });
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', resolve);
  });
  return {
    socket,
    text: () => text,
    isClosed: () => isClosed,
    closed,
    waitFor: async (expected, timeoutMs = 1_000) => {
      const deadline = performance.now() + timeoutMs;
      while (!text.includes(expected)) {
        if (performance.now() > deadline) assert.fail(`timed out waiting for ${JSON.stringify(expected)}, got ${text}`);
        await sleep(5);
      }
    },
  };
}

async function within<T>(promise: Promise<T>, ms = 1_000): Promise<T> {
  const controller = new AbortController();
  try {
    return await Promise.race([
      promise,
      sleep(ms, undefined, { signal: controller.signal }).then(() => assert.fail(`not settled within ${ms} ms`)),
    ]);
  } finally {
    controller.abort();
  }
}

let echo: Echo;
before(async () => {
  echo = await startEcho();
});
after(async () => {
  await echo.close();
});

test('pass forwards bytes both ways and counts them', async () => {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
  assert.equal(proxy.url, `https://127.0.0.1:${proxy.port}`);
  assert.deepEqual(proxy.mode, { kind: 'pass' });
  const client = await open(proxy.port);
  client.socket.write('hello\n');
  await client.waitFor('hello\n');
  assert.deepEqual(proxy.stats(), { connectionsAccepted: 1, openConnections: 1, bytesForwarded: 12 });
  client.socket.end();
  const outcome = await within(client.closed);
  assert.equal(outcome.hadError, false);
  await sleep(20);
  assert.equal(proxy.stats().openConnections, 0);
  await proxy.close();
});

test('freeze holds data and closes on open connections, and pass releases them in order', async () => {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
  const first = await open(proxy.port);
  first.socket.write('a');
  await first.waitFor('a');
  const endsBefore = echo.ends();

  proxy.setMode({ kind: 'freeze' });
  first.socket.write('b');
  await sleep(10);
  first.socket.write('c');
  const late = await open(proxy.port);
  late.socket.write('x');
  const quitter = await open(proxy.port);
  quitter.socket.end('q');
  await sleep(200);
  assert.equal(first.text(), 'a');
  assert.equal(late.text(), '');
  assert.equal(quitter.text(), '');
  assert.equal(first.isClosed() || late.isClosed() || quitter.isClosed(), false);
  assert.equal(echo.ends(), endsBefore, 'a frozen proxy must not pass a close on');
  assert.equal(proxy.stats().connectionsAccepted, 3);

  proxy.setMode({ kind: 'pass' });
  await first.waitFor('abc');
  assert.equal(first.text(), 'abc');
  await late.waitFor('x');
  await quitter.waitFor('q');
  const outcome = await within(quitter.closed);
  assert.equal(outcome.ended, true);
  assert.equal(first.isClosed(), false);
  first.socket.write('d');
  await first.waitFor('abcd');
  await proxy.close();
});

test('drop ends current connections and closes new ones right after accept', async () => {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
  const client = await open(proxy.port);
  client.socket.write('ping');
  await client.waitFor('ping');
  proxy.setMode({ kind: 'drop' });
  const outcome = await within(client.closed);
  assert.equal(outcome.ended, true);
  assert.equal(outcome.hadError, false);

  const next = await open(proxy.port);
  const refused = await within(next.closed);
  assert.equal(refused.hadError, false);
  assert.equal(next.text(), '');
  assert.equal(proxy.stats().connectionsAccepted, 2);
  await proxy.close();
});

test('reset sends RST to current and new connections', async () => {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
  const client = await open(proxy.port);
  client.socket.write('ping');
  await client.waitFor('ping');
  proxy.setMode({ kind: 'reset' });
  const outcome = await within(client.closed);
  assert.equal(outcome.hadError, true);
  assert.equal(outcome.error?.code, 'ECONNRESET');

  const next = await open(proxy.port);
  const refused = await within(next.closed);
  assert.equal(refused.hadError, true);
  assert.equal(refused.error?.code, 'ECONNRESET');
  await proxy.close();
});

test('delay delivers every chunk late, in order', async () => {
  const proxy = await FaultProxy.start({
    target: { host: '127.0.0.1', port: echo.port },
    mode: { kind: 'delay', ms: 150 },
  });
  const client = await open(proxy.port);
  const started = performance.now();
  for (const chunk of ['1', '2', '3', '4', '5']) {
    client.socket.write(chunk);
    await sleep(10);
  }
  await client.waitFor('1');
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= 150, `round trip took ${elapsed} ms`);
  await client.waitFor('12345');
  assert.equal(client.text(), '12345');

  // Lifting the delay delivers what is still on its way at once, still in order.
  client.socket.write('6');
  client.socket.write('7');
  await sleep(20);
  proxy.setMode({ kind: 'pass' });
  await client.waitFor('1234567', 100);

  // A close is delayed like data: it arrives after the last bytes.
  proxy.setMode({ kind: 'delay', ms: 50 });
  client.socket.end('8');
  const outcome = await within(client.closed);
  assert.equal(outcome.ended, true);
  assert.equal(client.text(), '12345678');
  await proxy.close();
});

test('close ends every connection, stops listening, is idempotent and leaves no handles', async () => {
  const proxy = await FaultProxy.start({
    target: { host: '127.0.0.1', port: echo.port },
    mode: { kind: 'delay', ms: 1_000 },
  });
  const a = await open(proxy.port);
  const b = await open(proxy.port);
  a.socket.write('pending');
  proxy.setMode({ kind: 'freeze' });
  proxy.setMode({ kind: 'delay', ms: 1_000 });
  await Promise.all([proxy.close(), proxy.close()]);
  await within(Promise.all([a.closed, b.closed]));
  assert.equal(a.text(), '');
  assert.equal(proxy.stats().openConnections, 0);

  const refused = await open(proxy.port);
  const outcome = await within(refused.closed);
  assert.equal(outcome.error?.code, 'ECONNREFUSED');
  await proxy.close();

  await sleep(10);
  const handles = process.getActiveResourcesInfo().filter((kind) => kind.startsWith('TCP') || kind === 'Timeout');
  assert.deepEqual(handles, ['TCPServerWrap'], 'no proxy socket or timer may be left (only the echo server)');
});

test('an unreachable target closes the client', async () => {
  const gone = await startEcho();
  await gone.close();
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: gone.port } });
  const client = await open(proxy.port);
  await within(client.closed);
  assert.equal(client.text(), '');
  await proxy.close();
});

test('targetOf parses apiserver URLs and rejects bad ones', () => {
  assert.deepEqual(targetOf('https://127.0.0.1:6443'), { host: '127.0.0.1', port: 6443 });
  assert.deepEqual(targetOf('https://[::1]:6443/'), { host: '::1', port: 6443 });
  assert.deepEqual(targetOf('https://example.test'), { host: 'example.test', port: 443 });
  assert.throws(
    () => targetOf('not a url'),
    (err) => isTestenvError(err, 'InvalidOption'),
  );
  assert.throws(
    () => targetOf('ftp://127.0.0.1:21'),
    (err) => isTestenvError(err, 'InvalidOption'),
  );
});

test('invalid modes are rejected', async () => {
  const proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
  assert.throws(
    () => proxy.setMode({ kind: 'delay', ms: -1 }),
    (err) => isTestenvError(err, 'InvalidOption'),
  );
  assert.deepEqual(proxy.mode, { kind: 'pass' });
  await proxy.close();
});
