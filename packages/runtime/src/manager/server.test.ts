import assert from 'node:assert/strict';
import { test } from 'node:test';
import tls from 'node:tls';
import { handshakeTls11 as tls11 } from '../tls/handshake.fixture.ts';
import { selfSignedCertificate } from '../tls/issue.ts';
import { HttpEndpoints } from './server.ts';

/** host:port → the TLS 1.1 handshake's outcome. */
const handshakeTls11 = (address: string) =>
  tls11(address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1)));

test('a reloaded certificate keeps TLS 1.2 as the minimum, even where the process allows older versions', async () => {
  // a process started with --tls-min-v1.0 and a permissive cipher list: only the server's own settings refuse TLS 1.1
  const saved = { min: tls.DEFAULT_MIN_VERSION, ciphers: tls.DEFAULT_CIPHERS };
  tls.DEFAULT_MIN_VERSION = 'TLSv1';
  tls.DEFAULT_CIPHERS = 'DEFAULT@SECLEVEL=0';
  const server = new HttpEndpoints('127.0.0.1:0', [], { tls: selfSignedCertificate(['localhost']) });
  try {
    await server.start();
    assert.equal(await handshakeTls11(server.address), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'at start');
    server.setCertificate(selfSignedCertificate(['localhost']));
    assert.equal(await handshakeTls11(server.address), 'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION', 'after a reload');
  } finally {
    tls.DEFAULT_MIN_VERSION = saved.min;
    tls.DEFAULT_CIPHERS = saved.ciphers;
    await server.stop();
  }
});
