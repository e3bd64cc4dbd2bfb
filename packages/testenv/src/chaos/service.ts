/**
 * @module chaos/service
 * The operator's webhook Service on loopback: one address (`127.0.0.1:<port>`) that hands each new TCP connection to
 * the next replica that is up (its process runs and is not paused), as a ClusterIP spreads connections over the ready
 * endpoints; the TLS inside passes through untouched, so the apiserver talks to the replica's own webhook server.
 * `down(true)` takes the whole Service down (the `webhook-down` fault): its open connections are closed and every new
 * one is closed at once, until `down(false)`.
 *
 * Guarantees: a connection goes to one replica for its whole life; a replica whose port refuses the connection is
 * skipped for the next one up; with none up, or while the Service is down, the connection is closed at once (the
 * apiserver sees the webhook unreachable, as with a Service without endpoints); `close()` ends every connection and
 * stops listening.
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
  readonly #server: Server;
  readonly #endpoints: () => readonly Endpoint[];
  readonly #sockets = new Set<Socket>();
  #port = 0;
  #next = 0;
  #down = false;

  private constructor(endpoints: () => readonly Endpoint[]) {
    this.#endpoints = endpoints;
    this.#server = createServer((client) => this.#route(client));
  }

  /** Listens on a free port of 127.0.0.1 and routes to `endpoints` (read at each connection). */
  static async start(endpoints: () => readonly Endpoint[]): Promise<WebhookService> {
    const service = new WebhookService(endpoints);
    service.#port = await listenOnLoopback(service.#server, 'webhook Service');
    return service;
  }

  /** The port it listens on, on 127.0.0.1. */
  get port(): number {
    return this.#port;
  }

  /**
   * Takes the Service down (`true`: its open connections are closed, new ones closed at once) or brings it back
   * (`false`: new connections are routed again); either is a no-op when it is so already.
   */
  down(on: boolean): void {
    this.#down = on;
    if (on) for (const s of this.#sockets) s.destroy();
  }

  /** Ends every connection and stops listening. */
  async close(): Promise<void> {
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    await closed;
  }

  #track(socket: Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }

  /** Hands `client` to the next endpoint up that accepts it; closes it when there is none, or the Service is down. */
  #route(client: Socket): void {
    this.#track(client);
    client.on('error', () => {});
    if (this.#down) {
      client.destroy();
      return;
    }
    const candidates = this.#endpoints();
    const tryFrom = (tried: number) => {
      const ups = candidates.filter((e) => e.up());
      if (tried >= ups.length || this.#down) {
        client.destroy();
        return;
      }
      const endpoint = ups[(this.#next++ + tried) % ups.length] as Endpoint;
      const upstream = connect(endpoint.port, '127.0.0.1');
      upstream.once('error', () => {
        if (upstream.bytesRead === 0 && !client.destroyed) tryFrom(tried + 1);
        else client.destroy();
      });
      upstream.once('connect', () => {
        this.#track(upstream);
        upstream.removeAllListeners('error');
        upstream.on('error', () => client.destroy());
        client.pipe(upstream).pipe(client);
        client.once('close', () => upstream.destroy());
        upstream.once('close', () => client.destroy());
        if (this.#down || client.destroyed) upstream.destroy();
      });
    };
    tryFrom(0);
  }
}
