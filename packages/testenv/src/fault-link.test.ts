/**
 * `resetSocket` on real loopback sockets: a reset always ends in a closed handle, also for a socket whose shutdown
 * (`end()`) is in flight, where the kernel-level reset is refused.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { test } from 'node:test';
import { resetSocket } from './fault-link.ts';

async function pair(): Promise<{ server: Server; client: Socket; peer: Socket }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect(port, '127.0.0.1');
  await once(client, 'connect');
  const [peer] = await accepted;
  return { server, client, peer };
}

test('resetSocket closes a socket whose shutdown is in flight: no handle is left open', async () => {
  const { server, client, peer } = await pair();
  try {
    client.end(); // its shutdown reaches libuv on the next tick and completes in a later turn of the loop
    await new Promise((resolve) => process.nextTick(resolve));
    const errors: Error[] = [];
    client.on('error', (err) => errors.push(err));
    const closed = new Promise((resolve) => client.once('close', () => resolve('closed')));
    resetSocket(client); // while the shutdown is in flight: a kernel-level reset is refused (EINVAL)
    const outcome = await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 2_000, 'still open'))]);
    assert.deepEqual(errors.map(String), [], 'no refused reset');
    assert.equal(outcome, 'closed', 'the socket closed (its handle with it)');
  } finally {
    peer.destroy();
    client.destroy();
    server.close();
  }
});

test('resetSocket resets a connected socket: the peer sees ECONNRESET', async () => {
  const { server, client, peer } = await pair();
  try {
    const error = once(peer, 'error');
    resetSocket(client);
    const [err] = (await error) as [NodeJS.ErrnoException];
    assert.equal(err.code, 'ECONNRESET');
  } finally {
    peer.destroy();
    server.close();
  }
});
