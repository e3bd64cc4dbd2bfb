/**
 * @module chaos/service
 * The operator's webhook Service, as kube-proxy and the EndpointSlice controller make it: one address (127.0.0.1, a
 * free port) in front of the replicas' webhook servers, TCP end to end (TLS is the replicas' own). Each new
 * connection goes to the next ready endpoint in turn and stays with it until either side closes it, as a connection
 * through a ClusterIP does.
 *
 * An endpoint is ready while its process runs, it is not terminating, and its last readiness probe (`GET /readyz`
 * on its health port, every 200 ms, 1 s timeout) answered 200 — so a new replica is routed to only once it serves. A
 * replica given SIGTERM is marked terminating only after `terminating(name, lagMs)` has waited `lagMs`: in a rolling
 * update the kubelet's SIGTERM and the endpoints' update travel separately, so calls keep arriving at a replica
 * that is already stopping. Until then its failing readiness probe does not take it out either (the pod's deletion
 * removes the endpoint; a probe, every 10 s by default, rarely sees a stopping replica first), so the whole lag is
 * routed to it. A connection that finds no ready endpoint, or whose endpoint refuses it, is reset
 * (RST), as a REJECT rule or a dead backend answers. `down()` resets every connection and refuses new ones until
 * `up()` (the `webhook-down` fault). `paused(name, true)` (the `pause` fault: the replica's process is stopped) takes
 * its endpoint out at once and resets the connections routed to it, as a failed readiness probe and a client giving
 * up on a silent server would, only sooner: the fault is about the replica's Lease, not the webhooks' availability.
 */
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from '@opkit/runtime';
import { resetSocket } from '@opkit/testenv';

interface Endpoint {
  readonly name: string;
  readonly port: number;
  readonly healthPort: number;
  running: boolean;
  terminating: boolean;
  /** SIGTERM was sent: routed to, whatever its probe says, until `terminating` (the endpoints' lag). */
  stopping: boolean;
  /** Its process is stopped (SIGSTOP): not routed to. */
  paused: boolean;
  probed: boolean;
  /** Changes with each start and exit, so a probe answered for one process does not speak for the next. */
  generation: number;
}

export interface ServiceStats {
  /** Connections routed to each endpoint, by name. */
  readonly routed: Record<string, number>;
  /** Connections reset because no endpoint was ready, or the chosen one refused. */
  readonly reset: number;
  /** The last resets: when (`performance.now()`), and why (`no endpoint`, `down`, or `<name> refused: <error>`). */
  readonly resets: readonly { readonly at: number; readonly why: string }[];
}

const PROBE_PERIOD_MS = 200;
/** How many times `acrossWebhookResets` sends a write. */
const WRITE_ATTEMPTS = 4;

/**
 * Sends one of the harness's own writes (an idempotent PATCH), and sends it again, up to `WRITE_ATTEMPTS` times in
 * all, 100 ms apart, while the apiserver fails it because its connection to a webhook was reset under it. The Service
 * resets the connections of a paused replica (`paused`), and those of a replica that exits end with it; the apiserver
 * keeps such connections for reuse and can write a conversion request onto one just as the reset arrives, and does
 * not send a POST again by itself. A client of a real cluster meets the same refusal when a webhook pod dies, and
 * sends again. The invariants judged are the operator's, so the harness does too. Any other failure, and the last
 * one, is thrown.
 */
export async function acrossWebhookResets<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= WRITE_ATTEMPTS || !isWebhookReset(err)) throw err;
      await sleep(100);
    }
  }
}

function isWebhookReset(err: unknown): boolean {
  return (
    err instanceof ApiError &&
    err.status === 500 &&
    /webhook/.test(err.message) &&
    /connection reset by peer|broken pipe|EOF/.test(err.message)
  );
}

const PROBE_TIMEOUT_MS = 1_000;

export class Service {
  readonly #server: Server;
  readonly #endpoints: Endpoint[] = [];
  /** Each client connection, and the endpoint it is routed to. */
  readonly #clients = new Map<Socket, Endpoint>();
  readonly #routed: Record<string, number> = {};
  #reset = 0;
  readonly #resets: { at: number; why: string }[] = [];
  #next = 0;
  #down = false;
  #closed = false;
  readonly #timer: NodeJS.Timeout;

  private constructor(server: Server) {
    this.#server = server;
    this.#timer = setInterval(() => {
      for (const e of this.#endpoints) this.#probe(e);
    }, PROBE_PERIOD_MS);
    this.#timer.unref();
  }

  static async start(): Promise<Service> {
    const server = createServer();
    const service = new Service(server);
    server.on('connection', (socket) => service.#route(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return service;
  }

  get port(): number {
    const a = this.#server.address();
    return typeof a === 'object' && a !== null ? a.port : 0;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  get stats(): ServiceStats {
    return { routed: { ...this.#routed }, reset: this.#reset, resets: [...this.#resets] };
  }

  /** Adds a replica's endpoint (its webhook port, and the health port its readiness is probed on). */
  add(name: string, port: number, healthPort: number): void {
    this.#endpoints.push({
      name,
      port,
      healthPort,
      running: false,
      terminating: false,
      stopping: false,
      paused: false,
      probed: false,
      generation: 0,
    });
  }

  /** The replica's process started (a new pod): routed to once its readiness probe passes. */
  started(name: string): void {
    const e = this.#endpoint(name);
    e.generation += 1;
    e.running = true;
    e.terminating = false;
    e.stopping = false;
    e.paused = false;
    e.probed = false;
  }

  /** The replica's process exited: no longer routed to, its connections are gone with it. */
  exited(name: string): void {
    const e = this.#endpoint(name);
    e.generation += 1;
    e.running = false;
    e.stopping = false;
    e.paused = false;
    e.probed = false;
  }

  /** The replica is being stopped (SIGTERM): `lagMs` later, the endpoints stop routing new connections to it. */
  terminating(name: string, lagMs: number): void {
    const e = this.#endpoint(name);
    const generation = e.generation;
    e.stopping = true;
    setTimeout(() => {
      if (e.generation === generation) e.terminating = true;
    }, lagMs).unref();
  }

  /**
   * The replica's process was stopped (`true`: no longer routed to, its connections reset now) or continued (`false`:
   * routed to again once a probe of the running process passes).
   */
  paused(name: string, paused: boolean): void {
    const e = this.#endpoint(name);
    e.paused = paused;
    e.probed = false;
    if (paused) for (const [s, to] of this.#clients) if (to === e) resetSocket(s);
  }

  /** The names of the endpoints new connections can go to now. */
  ready(): string[] {
    return this.#endpoints.filter(isReady).map((e) => e.name);
  }

  /** Resolves once `count` endpoints are ready; rejects after `timeoutMs`. */
  async waitReady(count: number, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.ready().length < count) {
      if (performance.now() > deadline)
        throw new Error(
          `the webhook Service had ${this.ready().length} ready endpoints, not ${count}, after ${timeoutMs / 1000} s`,
        );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Resets every connection and refuses new ones until `up()`. */
  async down(): Promise<void> {
    this.#down = true;
    for (const s of this.#clients.keys()) resetSocket(s);
  }

  async up(): Promise<void> {
    this.#down = false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    for (const s of this.#clients.keys()) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #endpoint(name: string): Endpoint {
    const e = this.#endpoints.find((x) => x.name === name);
    if (!e) throw new Error(`the webhook Service has no endpoint ${name}`);
    return e;
  }

  #route(client: Socket): void {
    client.on('error', () => {});
    const ready = this.#endpoints.filter(isReady);
    if (this.#down || ready.length === 0) {
      this.#noteReset(this.#down ? 'down' : 'no endpoint');
      resetSocket(client);
      return;
    }
    const e = ready[this.#next++ % ready.length] as Endpoint;
    this.#routed[e.name] = (this.#routed[e.name] ?? 0) + 1;
    this.#clients.set(client, e);
    client.pause();
    const backend = connect({ host: '127.0.0.1', port: e.port });
    let connected = false;
    backend.once('connect', () => {
      connected = true;
      client.pipe(backend);
      backend.pipe(client);
      client.resume();
    });
    backend.on('error', (err) => {
      if (!connected) this.#noteReset(`${e.name} refused: ${err.message}`);
      resetSocket(client);
    });
    client.on('close', () => {
      this.#clients.delete(client);
      backend.destroy();
    });
    backend.on('close', () => {
      if (!client.destroyed) client.end();
    });
  }

  #noteReset(why: string): void {
    this.#reset += 1;
    this.#resets.push({ at: performance.now(), why });
    if (this.#resets.length > 50) this.#resets.shift();
  }

  #probe(e: Endpoint): void {
    if (this.#closed || !e.running) return;
    const generation = e.generation;
    const req = request(
      { host: '127.0.0.1', port: e.healthPort, path: '/readyz', timeout: PROBE_TIMEOUT_MS, agent: false },
      (res) => {
        res.resume();
        if (e.generation === generation) e.probed = res.statusCode === 200;
      },
    );
    req.on('timeout', () => req.destroy(new Error('probe timed out')));
    req.on('error', () => {
      if (e.generation === generation) e.probed = false;
    });
    req.end();
  }
}

function isReady(e: Endpoint): boolean {
  return e.running && !e.paused && !e.terminating && (e.probed || e.stopping);
}
