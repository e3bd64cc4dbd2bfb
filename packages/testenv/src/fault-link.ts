/**
 * @module fault-link
 * One proxied connection of a `FaultProxy` (fault-proxy.ts): a client socket, its upstream socket, and one ordered
 * queue each way that the proxy's current mode gates — delivered now (pass), after `ms` (delay), held (freeze) — and
 * the ways a link ends (drop: FIN, reset: RST, destroy).
 *
 * Guarantees: bytes are delivered in order per direction, and how a source went away (end, close, reset, destroy) is
 * passed on in order after them; a frozen direction reads up to about 1 MiB (`HIGH_WATER`) before it pauses its
 * source and resumes it below 256 KiB; a stopped direction holds no timer and no data.
 */
import type { Socket } from 'node:net';
import { clearTimeout, setTimeout } from 'node:timers';
import type { FaultMode } from './fault-proxy.ts';

/** Bytes queued in one direction before the source socket is paused (backpressure, and a bound while frozen). */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/** What one direction of a connection still has to deliver: data, or how the source side went away. */
type Item =
  | { readonly kind: 'data'; readonly chunk: Buffer; due: number }
  | { readonly kind: 'end' | 'close' | 'destroy' | 'reset'; due: number };

type Timer = ReturnType<typeof setTimeout>;

/** What a link asks of its proxy: the current mode, and where to count bytes and report its end. */
export interface LinkHost {
  mode(): FaultMode;
  forwarded(bytes: number): void;
  finished(link: Link): void;
}

/** One direction (source to destination) of a proxied connection: an ordered queue, delivered by `pump()`. */
class Direction {
  readonly from: Socket;
  readonly to: Socket;
  readonly #host: LinkHost;
  readonly #queue: Item[] = [];
  #queuedBytes = 0;
  #timer: Timer | undefined;
  #waitingDrain = false;
  #pausedSource = false;
  #done = false;

  constructor(host: LinkHost, from: Socket, to: Socket) {
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
export class Link {
  readonly client: Socket;
  readonly upstream: Socket;
  readonly #host: LinkHost;
  readonly #up: Direction;
  readonly #down: Direction;
  #aborted = false;
  #closedSides = 0;

  constructor(host: LinkHost, client: Socket, upstream: Socket) {
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

/**
 * Resets `socket` (RST), or destroys it where a reset is not possible. A socket that was ended is destroyed: once its
 * shutdown reached libuv, the kernel-level reset is refused (EINVAL), and Node then leaves the socket's handle open
 * for good (it holds the process's exit: Node's teardown waits on it at 100 % of a core). Its FIN is on its way
 * already, so the peer sees the connection end either way.
 */
export function resetSocket(socket: Socket): void {
  if (socket.destroyed) return;
  if (socket.writableEnded) {
    socket.destroy();
    return;
  }
  try {
    socket.resetAndDestroy();
  } catch {
    socket.destroy();
  }
}
