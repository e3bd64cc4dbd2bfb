/**
 * Test fixture (not built or shipped): the protocol a client limited to TLS 1.1 gets from a server, or the error code
 * of the refused handshake — how the HTTPS servers' tests check that TLS 1.2 stays the minimum.
 */
import { connect } from 'node:tls';

export function handshakeTls11(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const c = connect(
      {
        host,
        port,
        rejectUnauthorized: false,
        minVersion: 'TLSv1',
        maxVersion: 'TLSv1.1',
        ciphers: 'DEFAULT@SECLEVEL=0',
      },
      () => {
        resolve(c.getProtocol() ?? 'none');
        c.end();
      },
    );
    c.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}
