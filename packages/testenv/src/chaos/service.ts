/**
 * @module chaos/service
 * An operator's webhook Service on loopback, as kube-proxy and the EndpointSlice controller make it: one address
 * (`127.0.0.1:<port>`) in front of the replicas' webhook servers, TCP end to end (the TLS inside is the replicas'
 * own, untouched). Each new connection goes to the next ready endpoint in turn and stays with it until either side
 * closes it, as a connection through a ClusterIP does.
 *
 * An endpoint is ready while its process runs, is not paused and is not terminating, and its last readiness probe
 * passed: `GET /readyz` on its health port answered 200, or, for an endpoint without a health port, its webhook port
 * accepted a TCP connection (a `tcpSocket` probe); every 200 ms, 1 s timeout. So a new replica is routed to only once
 * it serves. A replica told `terminating(name, lagMs)` (SIGTERM, a pod's deletion) leaves `lagMs` later: in a rolling
 * update the kubelet's SIGTERM and the endpoints' update travel separately, so calls keep arriving at a replica that
 * is already stopping, whatever its probe says until then. `paused(name, true)` (SIGSTOP) takes its endpoint out at
 * once and resets the connections routed to it, as a failed probe and a client giving up on a silent server would,
 * only sooner. `down(true)` (the `webhook-down` fault) resets every connection and refuses new ones until
 * `down(false)`. `events(name)` gives the calls to make as a replica's process starts, exits, pauses and stops, in
 * the shape chaos/replicas takes them.
 *
 * Guarantees: a connection goes to one endpoint for its whole life; a connection that finds no ready endpoint, or
 * whose endpoint refuses it, is reset (RST, as a REJECT rule or a dead backend answers), and counted in `stats`; a
 * probe's answer speaks only for the process it was sent to (a restart starts over); `close()` ends every connection,
 * stops probing and stops listening. `serveWebhooks` points the project's webhook configurations and conversion
 * webhooks at such a Service, and uninstalls them when it stops.
 */
import { request } from 'node:http';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { type CrdInput, loadCrds } from '../crds.ts';
import type { Environment } from '../environment.ts';
import { TestenvError } from '../errors.ts';
import { resetSocket } from '../fault-link.ts';
import { listenOnLoopback } from '../ports.ts';
import { waitFor } from '../wait.ts';
import type { Manifest } from './objects.ts';

/** One replica's webhook server, as the Service routes to it. */
export interface EndpointSpec {
  /** The replica's name (`chaos-0`). */
  readonly name: string;
  /** The port its webhook server listens on, on 127.0.0.1. */
  readonly port: number;
  /** The port of its health server (`/readyz`); without it, readiness is a TCP connect to `port`. */
  readonly healthPort?: number;
}

/** What a replica's supervisor tells the Service (chaos/replicas calls these). */
export interface EndpointEvents {
  /** A new process started: routed to once its probe passes. */
  started(): void;
  /** The process exited: not routed to, its connections gone with it. */
  exited(): void;
  /** SIGSTOP (`true`: out at once, its connections reset) or SIGCONT (`false`: back once probed). */
  paused(paused: boolean): void;
  /** SIGTERM was sent: out of the Service `lagMs` later. */
  terminating(lagMs: number): void;
}

/** What the Service did, for a report. */
export interface ServiceStats {
  /** Connections routed to each endpoint, by name. */
  readonly routed: Readonly<Record<string, number>>;
  /** Connections reset: no endpoint was ready, the Service was down, or the chosen endpoint refused. */
  readonly reset: number;
  /** The last 50 resets: when (`performance.now()`), and why (`no endpoint`, `down`, `<name> refused: <error>`). */
  readonly resets: readonly { readonly at: number; readonly why: string }[];
}

interface Endpoint extends EndpointSpec {
  running: boolean;
  /** SIGTERM was sent: routed to, whatever its probe says, until `terminating` (the endpoints' lag). */
  stopping: boolean;
  terminating: boolean;
  paused: boolean;
  probed: boolean;
  /** Changes with each start and exit, so a probe answered for one process does not speak for the next. */
  generation: number;
}

const PROBE_PERIOD_MS = 200;
const PROBE_TIMEOUT_MS = 1_000;
const RESETS_KEPT = 50;

/** A loopback Service in front of the replicas' webhook servers; see the module comment. */
export class WebhookService {
  readonly #server: Server;
  readonly #endpoints: Endpoint[] = [];
  /** Each client connection, and the endpoint it is routed to. */
  readonly #clients = new Map<Socket, Endpoint>();
  readonly #routed: Record<string, number> = {};
  readonly #resets: { at: number; why: string }[] = [];
  readonly #timer: NodeJS.Timeout;
  #port = 0;
  #reset = 0;
  #next = 0;
  #down = false;
  #closed = false;

  private constructor() {
    this.#server = createServer((client) => this.#route(client));
    this.#timer = setInterval(() => {
      for (const e of this.#endpoints) this.#probe(e);
    }, PROBE_PERIOD_MS);
    this.#timer.unref();
  }

  /** Listens on a free port of 127.0.0.1; endpoints are added with `add`. */
  static async start(): Promise<WebhookService> {
    const service = new WebhookService();
    service.#port = await listenOnLoopback(service.#server, 'webhook Service');
    return service;
  }

  /** The port it listens on, on 127.0.0.1. */
  get port(): number {
    return this.#port;
  }

  /** What it routed and reset so far. */
  get stats(): ServiceStats {
    return { routed: { ...this.#routed }, reset: this.#reset, resets: [...this.#resets] };
  }

  /** Adds a replica's endpoint, not yet running: the calls its supervisor makes (`events(spec.name)`). */
  add(spec: EndpointSpec): EndpointEvents {
    if (this.#endpoints.some((e) => e.name === spec.name))
      throw new TestenvError('ChaosInput', `the webhook Service has an endpoint ${spec.name} already`);
    this.#endpoints.push({
      ...spec,
      running: false,
      stopping: false,
      terminating: false,
      paused: false,
      probed: false,
      generation: 0,
    });
    return this.events(spec.name);
  }

  /** The calls a replica's supervisor makes for endpoint `name` (see `EndpointEvents`). */
  events(name: string): EndpointEvents {
    const e = this.#endpoint(name);
    const restart = (running: boolean) => {
      e.generation += 1;
      e.running = running;
      e.stopping = false;
      e.terminating = false;
      e.paused = false;
      e.probed = false;
    };
    return {
      started: () => restart(true),
      exited: () => restart(false),
      paused: (paused) => {
        e.paused = paused;
        e.probed = false;
        if (paused) for (const [s, to] of this.#clients) if (to === e) resetSocket(s);
      },
      terminating: (lagMs) => {
        const generation = e.generation;
        e.stopping = true;
        setTimeout(() => {
          if (e.generation === generation) e.terminating = true;
        }, lagMs).unref();
      },
    };
  }

  /** The names of the endpoints new connections can go to now. */
  ready(): string[] {
    return this.#endpoints.filter(isReady).map((e) => e.name);
  }

  /** Resolves once `count` endpoints are ready; rejects (`WaitTimeout`) after `timeoutMs`. */
  async waitReady(count: number, timeoutMs: number): Promise<void> {
    await waitFor(
      `${count} ready endpoints of the webhook Service`,
      async () => this.ready().length >= count,
      timeoutMs,
    );
  }

  /**
   * Takes the Service down (`true`: its open connections are reset, new ones refused) or brings it back (`false`);
   * either is a no-op when it is so already.
   */
  down(on: boolean): void {
    this.#down = on;
    if (on) for (const s of this.#clients.keys()) resetSocket(s);
  }

  /** Ends every connection, stops probing and stops listening. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const s of this.#clients.keys()) s.destroy();
    await closed;
  }

  #endpoint(name: string): Endpoint {
    const e = this.#endpoints.find((x) => x.name === name);
    if (!e) throw new TestenvError('ChaosInput', `the webhook Service has no endpoint ${name}`);
    return e;
  }

  #route(client: Socket): void {
    client.on('error', () => {});
    const ready = this.#endpoints.filter(isReady);
    const e = ready[this.#next++ % Math.max(1, ready.length)];
    if (this.#down || e === undefined) {
      this.#noteReset(this.#down ? 'down' : 'no endpoint');
      resetSocket(client);
      return;
    }
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
    if (this.#resets.length > RESETS_KEPT) this.#resets.shift();
  }

  #probe(e: Endpoint): void {
    if (this.#closed || !e.running || e.paused) return;
    const generation = e.generation;
    const answer = (ok: boolean) => {
      if (e.generation === generation) e.probed = ok;
    };
    if (e.healthPort === undefined) {
      const socket = connect({ host: '127.0.0.1', port: e.port });
      socket.setTimeout(PROBE_TIMEOUT_MS, () => {
        socket.destroy();
        answer(false);
      });
      socket.once('connect', () => {
        socket.destroy();
        answer(true);
      });
      socket.once('error', () => answer(false));
      return;
    }
    const req = request(
      { host: '127.0.0.1', port: e.healthPort, path: '/readyz', timeout: PROBE_TIMEOUT_MS, agent: false },
      (res) => {
        res.resume();
        answer(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy()); // its 'error' follows: not ready
    req.on('error', () => answer(false));
    req.end();
  }
}

function isReady(e: Endpoint): boolean {
  return e.running && !e.paused && !e.terminating && (e.probed || e.stopping);
}

/** The webhooks as the replicas serve them: where their certificate is, the Service, and how to stop serving them. */
export interface ServedWebhooks {
  readonly certDir: string;
  readonly service: WebhookService;
  /** Resolves once some replica's webhook server accepts connections (60 s at most). */
  listening(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The project's webhook configurations and the conversions of its CRDs pointed at a `WebhookService` in front of the
 * replicas (nothing when it has neither).
 */
export async function serveWebhooks(
  env: Environment,
  options: { readonly crds: readonly CrdInput[]; readonly webhooks?: readonly Manifest[] },
): Promise<ServedWebhooks | undefined> {
  const conversions = (await loadCrds(options.crds))
    .filter(
      (c) => (c.object as { spec?: { conversion?: { strategy?: string } } }).spec?.conversion?.strategy === 'Webhook',
    )
    .map((c) => c.name);
  const configurations = options.webhooks ?? [];
  if (conversions.length === 0 && configurations.length === 0) return undefined;
  const service = await WebhookService.start();
  try {
    const installed = await env.installWebhooks({ configurations, conversions, port: service.port });
    return {
      certDir: installed.certDir,
      service,
      async listening() {
        await service.waitReady(1, 60_000).catch((cause: unknown) => {
          throw new TestenvError(
            'ChaosInput',
            `no replica serves its webhooks (on WEBHOOK_BIND_ADDRESS, with WEBHOOK_CERT_DIR) 60 s after it started, though the project has ${configurations.length > 0 ? 'webhook configurations' : 'conversion webhooks'}: does src/main.ts register them?`,
            { cause },
          );
        });
      },
      async stop() {
        await installed.uninstall().catch(() => {});
        await service.close();
      },
    };
  } catch (err) {
    await service.close();
    throw err;
  }
}
