/**
 * @module fault-proxy
 * A byte-level TCP proxy on 127.0.0.1 that puts network faults between a client (an operator) and a target (the
 * kube-apiserver): pass, freeze (silent hang), drop (FIN), reset (RST) and delay (a stale view). TLS is not
 * terminated; HTTPS clients connect to `https://127.0.0.1:<port>` and handshake with the target through the proxy.
 * Guarantees: bytes are delivered in order per direction in every mode; a freeze holds data and closes and
 * releases them, in order, on the same connections when lifted; socket errors never escape as uncaught exceptions;
 * after `close()` no socket, server or timer of the proxy keeps the event loop alive.
 * Caveats: a frozen connection still reads up to about 1 MiB per direction before pausing its source (the rest
 * waits in kernel buffers); switching from delay to pass delivers the still-delayed bytes at once; 'drop' on a
 * connection with unread incoming bytes may surface as a reset, which is the kernel's choice, not the proxy's.
 */
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { TestenvError } from './errors.ts';
import { Link, type LinkHost, resetSocket } from './fault-link.ts';
import { listenOnLoopback } from './ports.ts';

/**
 * What the proxy does to traffic: `pass` it, `freeze` it (a silent hang: connections stay open, nothing moves), `drop`
 * connections (FIN), `reset` them (RST), or `delay` every byte by `ms`.
 */
export type FaultMode =
  | { readonly kind: 'pass' }
  | { readonly kind: 'freeze' }
  | { readonly kind: 'drop' }
  | { readonly kind: 'reset' }
  | { readonly kind: 'delay'; readonly ms: number };

/** Counters of a `FaultProxy` since it started. */
export interface FaultProxyStats {
  /** Connections accepted (including those refused in drop or reset mode). */
  readonly connectionsAccepted: number;
  /** Connections open now. */
  readonly openConnections: number;
  /** Bytes delivered, both directions together. */
  readonly bytesForwarded: number;
}

/** Where `FaultProxy.start` forwards to, and the mode it starts in. */
export interface FaultProxyOptions {
  /** The server to forward to, e.g. the apiserver's host and port. */
  readonly target: { readonly host: string; readonly port: number };
  /** The initial mode (default `pass`). */
  readonly mode?: FaultMode | undefined;
}

function checkMode(mode: FaultMode): FaultMode {
  switch (mode.kind) {
    case 'pass':
    case 'freeze':
    case 'drop':
    case 'reset':
      return mode;
    case 'delay':
      if (!Number.isFinite(mode.ms) || mode.ms < 0) {
        throw new TestenvError('InvalidOption', `delay mode needs a finite, non-negative ms, got ${mode.ms}`);
      }
      return mode;
    default:
      throw new TestenvError('InvalidOption', `unknown fault mode ${JSON.stringify(mode)}`);
  }
}

/**
 * A TCP proxy on 127.0.0.1 in front of `target`, whose fault mode can be switched at any time.
 * Start it with `FaultProxy.start()`, point the client at `url` (or `127.0.0.1:port`) and `close()` it when done.
 */
export class FaultProxy {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  readonly #server: Server;
  readonly #target: { readonly host: string; readonly port: number };
  readonly #links = new Set<Link>();
  /** Sockets refused in drop/reset mode that may not have finished closing yet. */
  readonly #refused = new Set<Socket>();
  #mode: FaultMode;
  #accepted = 0;
  #bytes = 0;
  #closing: Promise<void> | undefined;
  readonly #host: LinkHost;

  /**
   * Starts a proxy on a free port of 127.0.0.1 in front of `options.target`; `InvalidOption` for a bad port or mode,
   * `FaultProxyListenFailed` when it cannot listen.
   */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const target = { host: options.target.host, port: options.target.port };
    if (!Number.isInteger(target.port) || target.port <= 0 || target.port > 65535) {
      throw new TestenvError('InvalidOption', `fault proxy target port must be 1-65535, got ${target.port}`);
    }
    const mode = checkMode(options.mode ?? { kind: 'pass' });
    const server = createServer({ allowHalfOpen: true });
    const port = await listenOnLoopback(server, 'fault proxy');
    return new FaultProxy(server, port, target, mode);
  }

  private constructor(
    server: Server,
    port: number,
    target: { readonly host: string; readonly port: number },
    mode: FaultMode,
  ) {
    this.#server = server;
    this.port = port;
    this.#target = target;
    this.#mode = mode;
    this.#host = {
      mode: () => this.#mode,
      forwarded: (bytes) => {
        this.#bytes += bytes;
      },
      finished: (link) => {
        this.#links.delete(link);
      },
    };
    server.on('error', () => {});
    server.on('connection', (client) => this.#accept(client));
  }

  /** `https://127.0.0.1:<port>`: the apiserver URL to give a client that should go through the proxy. */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /** The current mode. */
  get mode(): FaultMode {
    return this.#mode;
  }

  /**
   * Switch the fault mode. Lifting a freeze resumes the same connections and delivers what was held, in order;
   * 'drop' and 'reset' close every current connection at once; 'pass' delivers still-delayed bytes immediately.
   */
  setMode(mode: FaultMode): void {
    this.#mode = checkMode(mode);
    if (this.#closing !== undefined) return;
    switch (mode.kind) {
      case 'drop':
      case 'reset':
        for (const link of this.#links) link.abort(mode.kind);
        return;
      case 'pass':
        for (const link of this.#links) link.expedite();
        break;
      case 'freeze':
      case 'delay':
        break;
    }
    for (const link of this.#links) link.pump();
  }

  /** Its counters now. */
  stats(): FaultProxyStats {
    return { connectionsAccepted: this.#accepted, openConnections: this.#links.size, bytesForwarded: this.#bytes };
  }

  /** Stop listening and destroy every connection. Idempotent; resolves once the listening socket is closed. */
  close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closing = new Promise<void>((resolve) => {
        this.#server.close(() => resolve());
        for (const link of this.#links) link.abort('destroy');
        this.#links.clear();
        for (const socket of this.#refused) socket.destroy();
        this.#refused.clear();
      });
    }
    return this.#closing;
  }

  #accept(client: Socket): void {
    this.#accepted += 1;
    client.on('error', () => {});
    const kind = this.#mode.kind;
    if (this.#closing !== undefined) {
      client.destroy();
      return;
    }
    if (kind === 'drop' || kind === 'reset') {
      this.#refused.add(client);
      client.once('close', () => this.#refused.delete(client));
      if (kind === 'reset') resetSocket(client);
      else {
        client.resume();
        client.destroySoon();
      }
      return;
    }
    client.setNoDelay(true);
    const upstream = tcpConnect({ host: this.#target.host, port: this.#target.port, allowHalfOpen: true });
    upstream.on('error', () => {});
    upstream.setNoDelay(true);
    this.#links.add(new Link(this.#host, client, upstream));
  }
}

/** Parse an apiserver URL such as `https://127.0.0.1:6443` into a proxy target (default port 443, or 80 for http). */
export function targetOf(server: string): { host: string; port: number } {
  let url: URL;
  try {
    url = new URL(server);
  } catch (cause) {
    throw new TestenvError('InvalidOption', `not a URL: ${server}`, { cause });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TestenvError('InvalidOption', `expected an http(s) URL, got ${server}`);
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (host === '') throw new TestenvError('InvalidOption', `no host in ${server}`);
  const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { host, port };
}
