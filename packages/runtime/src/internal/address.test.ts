import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { boundAddress, parseBindAddress } from './address.ts';

test('bind addresses: host:port, :port on all interfaces, [v6]:port; anything else names the address', () => {
  assert.deepEqual(parseBindAddress('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 });
  assert.deepEqual(parseBindAddress(':8443'), { host: '0.0.0.0', port: 8443 });
  assert.deepEqual(parseBindAddress('[::1]:9443'), { host: '::1', port: 9443 });
  assert.throws(() => parseBindAddress('8080'), /bind address "8080" must be host:port, :port or 0/);
  assert.throws(() => parseBindAddress(':70000'), /port 70000 is out of range/);
});

test('a bound address is written back as a bind address: [v6]:port for IPv6, empty when not listening', async () => {
  const server = createServer();
  assert.equal(boundAddress(server), '');
  assert.equal(boundAddress(undefined), '');
  await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
  try {
    assert.match(boundAddress(server), /^\[::1\]:\d+$/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    assert.match(boundAddress(server), /^127\.0\.0\.1:\d+$/);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
