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
import { clearTimeout, setTimeout } from 'node:timers';
import { TestenvError } from './errors.ts';

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

/** Bytes queued in one direction before the source socket is paused (backpressure, and a bound while frozen). */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/** What one direction of a connection still has to deliver: data, or how the source side went away. */
type Item =
  | { readonly kind: 'data'; readonly chunk: Buffer; due: number }
  | { readonly kind: 'end' | 'close' | 'destroy' | 'reset'; due: number };

type Timer = ReturnType<typeof setTimeout>;

interface Host {
  mode(): FaultMode;
  forwarded(bytes: number): void;
  finished(link: Link): void;
}

/** One direction (source to destination) of a proxied connection: an ordered queue, delivered by `pump()`. */
class Direction {
  readonly from: Socket;
  readonly to: Socket;
  readonly #host: Host;
  readonly #queue: Item[] = [];
  #queuedBytes = 0;
  #timer: Timer | undefined;
  #waitingDrain = false;
  #pausedSource = false;
  #done = false;

  constructor(host: Host, from: Socket, to: Socket) {
    this.#host = host;
    this.from = from;
    this.to = to;
  }

  push(item: Item): void {
    if (this.#done) return;
    this.#queue.push(item);
    if (item.kind === 'data') {
      this.#queuedBytes += item.chunk.length;
      if (this.#queuedBytes > HIGH_WATER && !this.#pausedSource) {
        this.#pausedSource = true;
        this.from.pause();
      }
    }
    this.pump();
  }

  /** Make every queued item due now (delay lifted). */
  expedite(): void {
    for (const item of this.#queue) item.due = 0;
  }

  /** Deliver every due item unless frozen, waiting for 'drain' and scheduling a timer for the next delayed one. */
  pump(): void {
    this.#clearTimer();
    if (this.#done || this.#waitingDrain || this.#host.mode().kind === 'freeze') return;
    const now = performance.now();
    for (;;) {
      const item = this.#queue[0];
      if (item === undefined) break;
      if (item.due > now) {
        this.#timer = setTimeout(() => this.pump(), Math.max(1, Math.ceil(item.due - now)));
        break;
      }
      this.#queue.shift();
      if (item.kind === 'end') {
        if (!this.to.destroyed) this.to.end();
        continue;
      }
      if (item.kind !== 'data') {
        this.#finish(item.kind);
        return;
      }
      this.#queuedBytes -= item.chunk.length;
      if (this.to.destroyed) continue;
      this.#host.forwarded(item.chunk.length);
      if (!this.to.write(item.chunk)) {
        this.#waitingDrain = true;
        this.to.once('drain', () => {
          this.#waitingDrain = false;
          this.pump();
        });
        break;
      }
    }
    if (this.#pausedSource && this.#queuedBytes < LOW_WATER) {
      this.#pausedSource = false;
      if (!this.from.destroyed) this.from.resume();
    }
  }

  /** Stop for good: drop what is queued and cancel the timer (the destination can no longer receive it). */
  stop(): void {
    this.#done = true;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    this.#clearTimer();
  }

  /** The source is gone: pass that on to the destination and stop. */
  #finish(kind: 'close' | 'destroy' | 'reset'): void {
    const to = this.to;
    this.stop();
    if (to.destroyed) return;
    switch (kind) {
      case 'close':
        to.destroySoon();
        return;
      case 'destroy':
        to.destroy();
        return;
      case 'reset':
        resetSocket(to);
        return;
    }
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }
}

/** A client socket and its upstream socket, with one Direction each way. */
class Link {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly #host: Host;
  readonly #up: Direction;
  readonly #down: Direction;
  #aborted = false;
  #closedSides = 0;

  constructor(host: Host, client: Socket, upstream: Socket) {
    this.#host = host;
    this.client = client;
    this.upstream = upstream;
    this.#up = new Direction(host, client, upstream);
    this.#down = new Direction(host, upstream, client);
    this.#wire(this.#up, this.#down);
    this.#wire(this.#down, this.#up);
  }

  pump(): void {
    this.#up.pump();
    this.#down.pump();
  }

  expedite(): void {
    this.#up.expedite();
    this.#down.expedite();
  }

  /** Close both sockets now: 'drop' ends them (FIN), 'reset' resets them (RST), 'destroy' just destroys them. */
  abort(how: 'drop' | 'reset' | 'destroy'): void {
    this.#aborted = true;
    this.#up.stop();
    this.#down.stop();
    for (const socket of [this.client, this.upstream]) {
      if (socket.destroyed) continue;
      if (how === 'reset') resetSocket(socket);
      else if (how === 'drop' && !socket.connecting) {
        socket.resume();
        socket.destroySoon();
      } else socket.destroy();
    }
  }

  #wire(out: Direction, back: Direction): void {
    const source = out.from;
    let lastError: NodeJS.ErrnoException | undefined;
    source.on('data', (chunk: Buffer) => {
      if (!this.#aborted) out.push({ kind: 'data', chunk, due: this.#dueNow() });
    });
    source.on('end', () => {
      if (!this.#aborted) out.push({ kind: 'end', due: this.#dueNow() });
    });
    source.on('error', (err: NodeJS.ErrnoException) => {
      lastError = err;
    });
    source.on('close', (hadError: boolean) => {
      // Nothing can reach this socket any more; whatever was on its way to it is dropped.
      back.stop();
      if (!this.#aborted) {
        const kind = !hadError ? 'close' : lastError?.code === 'ECONNRESET' ? 'reset' : 'destroy';
        out.push({ kind, due: this.#dueNow() });
      }
      this.#closedSides += 1;
      if (this.#closedSides === 2) {
        out.stop();
        this.#host.finished(this);
      }
    });
  }

  #dueNow(): number {
    const mode = this.#host.mode();
    return mode.kind === 'delay' ? performance.now() + mode.ms : 0;
  }
}

function resetSocket(socket: Socket): void {
  if (socket.destroyed) return;
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
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
  readonly #host: Host;

  /**
   * Starts a proxy on a free port of 127.0.0.1 in front of `options.target`; `InvalidOption` for a bad port or mode.
   */
  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const target = { host: options.target.host, port: options.target.port };
    if (!Number.isInteger(target.port) || target.port <= 0 || target.port > 65535) {
      throw new TestenvError('InvalidOption', `fault proxy target port must be 1-65535, got ${target.port}`);
    }
    const mode = checkMode(options.mode ?? { kind: 'pass' });
    const server = createServer({ allowHalfOpen: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (address === null || typeof address === 'string') {
      server.close();
      throw new Error('fault proxy could not read its listening address');
    }
    return new FaultProxy(server, address.port, target, mode);
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
