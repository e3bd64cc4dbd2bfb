/**
 * @module chaos/service
 * The operator's webhook Service on loopback: one address (`127.0.0.1:<port>`) that hands each new TCP connection to
 * the next replica that is up (its process runs and is not paused), as a ClusterIP spreads connections over the ready
 * endpoints; the TLS inside passes through untouched, so the apiserver talks to the replica's own webhook server.
 *
 * Guarantees: a connection goes to one replica for its whole life; a replica whose port refuses the connection is
 * skipped for the next one up; with none up, the connection is closed at once (the apiserver sees the webhook
 * unreachable, as with a Service without endpoints); `close()` ends every connection and stops listening.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { listenOnLoopback } from '../ports.ts';

/** A replica as the Service sees it: whether it is up, and the port its webhook server listens on. */
export interface Endpoint {
  readonly port: number;
  up(): boolean;
}

/** A loopback Service in front of the replicas' webhook servers; see the module comment. */
export class WebhookService {
  readonly port: number;
  readonly #server: Server;
  readonly #sockets: Set<Socket>;

  private constructor(server: Server, port: number, sockets: Set<Socket>) {
    this.#server = server;
    this.port = port;
    this.#sockets = sockets;
  }

  /** Listens on a free port of 127.0.0.1 and routes to `endpoints` (read at each connection). */
  static async start(endpoints: () => readonly Endpoint[]): Promise<WebhookService> {
    const sockets = new Set<Socket>();
    let next = 0;
    const server = createServer((client) => {
      sockets.add(client);
      client.once('close', () => sockets.delete(client));
      client.on('error', () => {});
      const candidates = endpoints();
      const tryFrom = (tried: number) => {
        const ups = candidates.filter((e) => e.up());
        if (tried >= ups.length) {
          client.destroy();
          return;
        }
        const endpoint = ups[(next++ + tried) % ups.length] as Endpoint;
        const upstream = connect(endpoint.port, '127.0.0.1');
        upstream.once('error', () => {
          if (upstream.bytesRead === 0 && !client.destroyed) tryFrom(tried + 1);
          else client.destroy();
        });
        upstream.once('connect', () => {
          sockets.add(upstream);
          upstream.once('close', () => sockets.delete(upstream));
          upstream.removeAllListeners('error');
          upstream.on('error', () => client.destroy());
          client.pipe(upstream).pipe(client);
          client.once('close', () => upstream.destroy());
          upstream.once('close', () => client.destroy());
        });
      };
      tryFrom(0);
    });
    return new WebhookService(server, await listenOnLoopback(server, 'webhook Service'), sockets);
  }

  /** Ends every connection and stops listening. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }
}
