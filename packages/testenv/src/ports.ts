/**
 * @module ports
 * Free TCP ports on 127.0.0.1, chosen by the kernel. A port is free when returned; a component that then loses the
 * race for it fails to start and `environment.ts` retries with fresh ports. `listenOnLoopback` has a server of the
 * process listen on one directly, with no race.
 */
import { createServer, type Server } from 'node:net';
import { TestenvError } from './errors.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/**
 * Has `server` listen on a free port of 127.0.0.1 and returns the port; `FaultProxyListenFailed`, naming `what`, when
 * it cannot (the server is closed then).
 */
export async function listenOnLoopback(server: Server, what: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const failed = (cause: Error) =>
      reject(
        new TestenvError('FaultProxyListenFailed', `${what} could not listen on 127.0.0.1: ${cause.message}`, {
          cause,
        }),
      );
    server.once('error', failed);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', failed);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === 'string') {
    server.close();
    throw new TestenvError('FaultProxyListenFailed', `${what} could not read its listening address`);
  }
  return address.port;
}
