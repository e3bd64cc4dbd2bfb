/**
 * @module webhook/server
 * `WebhookServer`: the HTTPS endpoint the apiserver calls for admission (`AdmissionReview` admission.k8s.io/v1 and
 * v1beta1) and conversion (`ConversionReview` apiextensions.k8s.io/v1 and v1beta1). A Manager runs it on every replica
 * (it needs no leadership).
 *
 * Guarantees:
 * - Serves on `:9443` by default (with SO_REUSEPORT, so replicas on one host can share it), TLS ≥ 1.2, with the pair
 *   from its `CertificateSource`; a rotated pair is used for new connections at once (`setSecureContext`), open
 *   connections finish on the old one, so no request is lost.
 * - A review is answered in the apiVersion it came in, with the request's `uid`.
 * - Each review is answered within the apiserver's timeout (its `?timeout=` query, default 10 s), counted from the
 *   request's arrival: reading the body and running the handler share one budget that ends 250 ms before the
 *   timeout. The handler's signal aborts at its end, and a handler still running then (or a body still arriving,
 *   when nothing is left for a handler) is answered with an HTTP 504 carrying a `Status` (reason `Timeout`). The
 *   apiserver counts a non-2xx answer as a failed call, as it counts its own timeout, so the webhook's
 *   `failurePolicy` decides: `Ignore` admits the request, `Fail` refuses it with `failed calling webhook "…": failed
 *   to call webhook: the admission handler at /path did not answer within …`. A slow handler never denies a request.
 * - An admission handler that throws (or returns no response) denies the request with code 500 naming its path, as
 *   controller-runtime answers a handler's recovered panic: the apiserver refuses the request whatever the
 *   `failurePolicy`. A handler that should fail open catches its own errors and allows.
 * - A malformed admission request — not `application/json`, larger than `maxBodyBytes` (default 7 MiB, as
 *   controller-runtime), not JSON, not an AdmissionReview of v1 or v1beta1, no `request.uid`, an unknown operation —
 *   is answered as controller-runtime answers it: inside an AdmissionReview (HTTP 200, `allowed: false`, `status.code`
 *   413 for the size, 400 otherwise, a one-line message), with the request's uid and apiVersion where they could be
 *   read (else `uid: ""` and v1). The apiserver checks a v1 answer's uid, so it counts an answer without one as a
 *   failed call (the `failurePolicy` decides) and one with the uid as a denial. The rest of a body too large to read
 *   is drained unread (for at most 1 s) before the answer, so the apiserver gets the answer, not a broken pipe.
 * - A malformed conversion review gets a plain HTTP 400 with a one-line reason (413 for the size), as
 *   controller-runtime; a conversion handler that throws or runs out of time answers a `Failure` result (a body that
 *   does not arrive in time, the 504 above). Either way the apiserver fails the read or write that needed the
 *   conversion.
 * - No input crashes the process. Unknown paths get 404, methods other than POST 405.
 * - Metrics under controller-runtime's names: `controller_runtime_webhook_requests_total{webhook,code}` (the HTTP
 *   status), `controller_runtime_webhook_latency_seconds{webhook}`, `controller_runtime_webhook_requests_in_flight`.
 * - A server starts once. `listening` resolves once it listens (rejects with the error `start()` rejects with, or
 *   `WebhookServerStopped` when stopped first); `ready()` passes only once a TLS handshake with the server itself
 *   succeeds (controller-runtime's StartedChecker) and fails again from the moment its stop begins, so a readiness
 *   probe on it keeps the Service from routing to a replica that cannot answer.
 * - Once `drain()` is called (the Manager calls it when a graceful stop begins) or the stop begins, every answer
 *   closes its connection, so a client that keeps connections alive moves its next call to a new connection (to a
 *   ready replica, through the Service) instead of sending it to a server about to close. A connection left idle
 *   since before `drain()` stays open until the close.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:tls';
import { UsageError } from '../errors.ts';
import { boundAddress, parseBindAddress } from '../internal/address.ts';
import { type Logger, silentLogger } from '../logger.ts';
import type { Counter, Gauge, Histogram, Registry } from '../prometheus.ts';
import { secureContextOptions } from '../tls/keypair.ts';
import type { CertificateSource } from '../tls/sources.ts';
import type { AdmissionHandler } from './admission.ts';
import { answerAdmission, answerConversion, type Budget, budgetOf } from './answer.ts';
import type { ConversionHandler } from './conversion.ts';
import { WebhookServerError } from './errors.ts';
import { errorMessage, MAX_TIMEOUT_MS, parseTimeout, type Reply, text } from './review.ts';

/** Options of a `WebhookServer`; only `certificates` is required. */
export interface WebhookServerOptions {
  /** `host:port` or `:port` (default `:9443`); port 0 picks a free port. */
  readonly bindAddress?: string;
  /**
   * Where the serving certificate comes from (`FileCertificates`, `StaticCertificates`, `SecretCertificates`); a
   * rotated pair is served to new connections at once.
   */
  readonly certificates: CertificateSource;
  /** Where the webhook metrics go (default: not recorded). */
  readonly registry?: Registry;
  /** Where failed and late handlers are logged; silent by default. */
  readonly log?: Logger;
  /** Largest accepted body (default 7 MiB). */
  readonly maxBodyBytes?: number;
  /** Let the process exit while the server still listens (a server a test or tool runs beside its work). */
  readonly unref?: boolean;
}

const DEFAULT_MAX_BODY_BYTES = 7 * 1024 * 1024;
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Route =
  | { readonly type: 'admission'; readonly handler: AdmissionHandler }
  | { readonly type: 'conversion'; readonly handler: ConversionHandler };

interface WebhookMetrics {
  readonly total: Counter<'webhook' | 'code'>;
  readonly latency: Histogram<'webhook'>;
  readonly inFlight: Gauge<'webhook'>;
}

/** The webhook metrics, under controller-runtime's names. */
function webhookMetrics(r: Registry): WebhookMetrics {
  return {
    total: r.counter({
      name: 'controller_runtime_webhook_requests_total',
      help: 'Total number of admission requests by HTTP status code.',
      labelNames: ['webhook', 'code'],
    }),
    latency: r.histogram({
      name: 'controller_runtime_webhook_latency_seconds',
      help: 'Histogram of the latency of processing admission requests',
      labelNames: ['webhook'],
      buckets: LATENCY_BUCKETS,
    }),
    inFlight: r.gauge({
      name: 'controller_runtime_webhook_requests_in_flight',
      help: 'Current number of admission requests being served.',
      labelNames: ['webhook'],
    }),
  };
}

/**
 * The HTTPS server the apiserver calls for admission and conversion reviews: one handler per path, served until the
 * start signal aborts. See the module comment for its guarantees. A Manager with webhooks runs one; a test or tool
 * can run its own and wait for it with `listening`.
 *
 * @showModuleComment
 *
 * @example
 * ```ts
 * import { Pods } from '@opkit/runtime/kinds';
 * import { StaticCertificates, selfSignedCertificate } from '@opkit/runtime/tls';
 * import { fieldErrors, validator, WebhookServer } from '@opkit/runtime/webhook';
 *
 * const server = new WebhookServer({
 *   bindAddress: '127.0.0.1:0', // a free port
 *   certificates: new StaticCertificates(selfSignedCertificate(['127.0.0.1'])),
 * });
 * server.admission(
 *   '/validate-core-v1-pod',
 *   validator(Pods, {
 *     create: (pod) => ({
 *       errors: pod.metadata.labels?.app ? [] : [fieldErrors.required('metadata.labels.app')],
 *     }),
 *   }),
 * );
 * const stop = new AbortController();
 * const serving = server.start(stop.signal); // resolves only once stopped
 * await server.listening; // rejects with WebhookBindFailed when the port is taken
 * console.log(`webhooks on 127.0.0.1:${server.port}`);
 * stop.abort();
 * await serving;
 * ```
 */
export class WebhookServer {
  /** A Manager runs the server on every replica. */
  readonly needLeaderElection = false;
  /**
   * Resolves once `start()` listens (`port` and `address` are then set, and `ready()` can pass). Rejects with the
   * error the first `start()` rejects with (`WebhookBindFailed`, or the certificate source's error), or with
   * `WebhookServerStopped` when the signal aborts before the server listens. Awaiting it is optional: this promise
   * itself, left alone, is never reported as an unhandled rejection. A promise made from it is not covered:
   * `listening.then(f)` (or `Promise.all([listening, …])`) rejects too, and is reported as unhandled unless it is
   * awaited or given a `catch`.
   */
  readonly listening: Promise<void>;
  readonly #listened: { resolve(): void; reject(err: unknown): void };
  readonly #o: WebhookServerOptions;
  readonly #routes = new Map<string, Route>();
  readonly #log: Logger;
  readonly #metrics: WebhookMetrics | undefined;
  #started = false;
  #server: Server | undefined;
  #stopping = false;
  /** Every answer closes its connection (`drain()` was called, or the stop began). */
  #draining = false;

  constructor(options: WebhookServerOptions) {
    this.#o = options;
    this.#log = options.log ?? silentLogger;
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    promise.catch(() => {}); // the rejection is start()'s too: whoever awaits either sees it
    this.listening = promise;
    this.#listened = { resolve, reject };
    this.#metrics = options.registry && webhookMetrics(options.registry);
  }

  /** Serves an admission handler (mutating or validating) at `path`. */
  admission(path: string, handler: AdmissionHandler): this {
    return this.#add(path, { type: 'admission', handler });
  }

  /** Serves a conversion handler at `path` (conventionally `/convert`). */
  conversion(path: string, handler: ConversionHandler): this {
    return this.#add(path, { type: 'conversion', handler });
  }

  /** The registered paths. */
  get paths(): string[] {
    return [...this.#routes.keys()];
  }

  /** `host:port` actually bound (once `listening` resolved). */
  get address(): string {
    return boundAddress(this.#server);
  }

  /** The port actually bound (once `listening` resolved; 0 before). */
  get port(): number {
    return (this.#server?.address() as AddressInfo | null | undefined)?.port ?? 0;
  }

  /**
   * Serves until `signal` aborts, then stops taking connections, lets requests under way finish (at most 30 s, the
   * apiserver's longest timeout) and resolves. Rejects with `WebhookServerError` `WebhookBindFailed` when it cannot
   * listen, with the certificate source's error when the pair cannot be loaded, and with `UsageError` `AlreadyStarted`
   * when called again.
   * It resolves only at the stop: await `listening` to know when it serves.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) throw new UsageError('AlreadyStarted', 'a WebhookServer starts once');
    this.#started = true;
    let server: Server | undefined;
    try {
      server = await this.#listen(signal);
    } catch (err) {
      this.#listened.reject(err);
      throw err;
    }
    if (!server) {
      // stopped while loading the certificate: a stop, not a failure
      this.#listened.reject(
        new WebhookServerError('WebhookServerStopped', 'the webhook server was stopped before it listened'),
      );
      return;
    }
    // connections a client opened but has not sent a request on yet (Go keeps spare ones in its pool)
    const unused = new Set<Socket>();
    server.on('secureConnection', (socket: Socket) => {
      if (this.#stopping) return void socket.destroy(); // its handshake ended after the stop began
      unused.add(socket);
      socket.once('close', () => unused.delete(socket));
    });
    server.on('request', (req: IncomingMessage) => unused.delete(req.socket));
    await new Promise<void>((resolve) => {
      const stop = () => {
        this.#stopping = true; // not ready from this moment on
        this.#draining = true;
        resolve();
      };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    });
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      for (const socket of unused) socket.destroy(); // open, never sent a request: closeIdleConnections leaves them
      // requests under way get the apiserver's longest timeout; then the rest is cut
      setTimeout(() => server.closeAllConnections(), MAX_TIMEOUT_MS).unref();
    });
  }

  /**
   * From now on every answer closes its connection (`Connection: close`, as Go's `SetKeepAlivesEnabled(false)`): calls
   * are still answered, but a client that keeps connections alive (the apiserver does) makes its next call on a new
   * connection, which the Service routes to a replica that is ready. The Manager calls it when a graceful stop begins
   * (the stop itself starts draining too), so that calls move off this replica before its listener closes.
   */
  drain(): void {
    this.#draining = true;
  }

  /** Loads the pair and binds: the server listens and `listening` has resolved, or the signal aborted first. */
  async #listen(signal: AbortSignal): Promise<Server | undefined> {
    const pair = await this.#o.certificates.load(signal).catch((err: unknown) => {
      if (signal.aborted) return undefined; // stopped while waiting for a certificate: nothing to serve
      throw err;
    });
    if (!pair || signal.aborted) return undefined;
    const server = createServer(secureContextOptions(pair), (req, res) => this.#serve(req, res));
    server.headersTimeout = 10_000;
    // the apiserver (Go) keeps idle connections for 90 s; closing them sooner (Node's default: 5 s) makes it dial and
    // handshake again in the middle of traffic
    server.keepAliveTimeout = 120_000;
    server.requestTimeout = MAX_TIMEOUT_MS + 5_000;
    server.on('tlsClientError', () => {}); // a failed handshake is the client's problem, not a crash
    const unsubscribe = this.#o.certificates.onChange((p) => {
      server.setSecureContext(secureContextOptions(p));
      this.#log.info({}, 'webhook serving certificate reloaded');
    });
    const watching = new AbortController();
    this.#o.certificates.watch(AbortSignal.any([signal, watching.signal]));
    const bind = parseBindAddress(this.#o.bindAddress ?? ':9443');
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // reusePort: replicas run side by side on one host (local runs, tests) share the port, as behind a Service
        server.listen({ port: bind.port, host: bind.host, reusePort: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      unsubscribe();
      watching.abort();
      throw new WebhookServerError(
        'WebhookBindFailed',
        `webhook server cannot listen on ${bind.host}:${bind.port}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    server.once('close', () => {
      unsubscribe();
      watching.abort();
    });
    if (this.#o.unref) server.unref();
    this.#server = server;
    this.#log.info({ address: this.address, paths: this.paths }, 'serving webhooks');
    this.#listened.resolve();
    return server;
  }

  /**
   * A readiness check: passes once a TLS handshake with this server succeeds. Rejects with `WebhookNotListening`
   * until the server listens (await `listening` first), with `WebhookServerStopped` from the moment its stop begins,
   * and with `WebhookHandshakeFailed` when the handshake fails.
   */
  ready = async (): Promise<void> => {
    if (this.#stopping) throw new WebhookServerError('WebhookServerStopped', 'the webhook server is stopping');
    const server = this.#server;
    if (!server) throw new WebhookServerError('WebhookNotListening', 'the webhook server is not listening yet');
    const a = server.address() as AddressInfo;
    const host = a.address === '0.0.0.0' ? '127.0.0.1' : a.address === '::' ? '::1' : a.address;
    await new Promise<void>((resolve, reject) => {
      const socket = connect({ host, port: a.port, rejectUnauthorized: false, timeout: 2_000 }, () => {
        socket.end();
        resolve();
      });
      socket.once('error', (err) =>
        reject(new WebhookServerError('WebhookHandshakeFailed', `webhook server: ${err.message}`, { cause: err })),
      );
      socket.once('timeout', () => {
        socket.destroy();
        reject(new WebhookServerError('WebhookHandshakeFailed', 'webhook server: TLS handshake timed out'));
      });
    });
  };

  #add(path: string, route: Route): this {
    if (!path.startsWith('/')) throw new UsageError('InvalidArgument', `webhook path "${path}" must start with "/"`);
    if (this.#routes.has(path)) throw new WebhookServerError('DuplicatePath', `a webhook is already served at ${path}`);
    this.#routes.set(path, route);
    return this;
  }

  #serve(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const route = this.#routes.get(url.pathname);
    if (!route) {
      req.resume();
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`no webhook at ${url.pathname}\n`);
      return;
    }
    const webhook = url.pathname;
    const started = performance.now();
    this.#metrics?.inFlight.inc({ webhook });
    const finish = (reply: Reply) => {
      this.#metrics?.inFlight.dec({ webhook });
      this.#metrics?.total.inc({ webhook, code: String(reply.status) });
      this.#metrics?.latency.observe({ webhook }, (performance.now() - started) / 1000);
      const send = () => {
        if (res.headersSent) return;
        res.writeHead(reply.status, {
          'content-type': reply.contentType,
          ...(reply.close || this.#draining ? { connection: 'close' } : {}),
        });
        res.end(reply.body);
      };
      // a body too large is drained first (≤ 1 s, in the apiserver's timeout): closing on a writer breaks its pipe
      if (!reply.drain || req.complete || req.destroyed) return send();
      const drained = setTimeout(send, Math.max(0, Math.min(1_000, budget.deadline - performance.now())));
      const done = () => {
        clearTimeout(drained);
        send();
      };
      req.resume().once('end', done).once('close', done);
    };
    const budget = budgetOf(parseTimeout(url.searchParams.get('timeout')), started);
    this.#handle(req, webhook, route, budget).then(finish, (err: unknown) => {
      // a response that cannot be serialized, or a fault of the server itself: never leave the apiserver waiting
      this.#log.error({ webhook, err: errorMessage(err) }, 'webhook failed');
      finish(text(500, 'internal error in the webhook server'));
    });
  }

  async #handle(req: IncomingMessage, path: string, route: Route, budget: Budget): Promise<Reply> {
    if (req.method !== 'POST') {
      req.resume();
      return text(405, `method ${req.method ?? ''} not allowed: webhooks take POST`);
    }
    const a = { log: this.#log, maxBodyBytes: this.#o.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES };
    return route.type === 'admission'
      ? answerAdmission(a, req, path, route.handler, budget)
      : answerConversion(a, req, path, route.handler, budget);
  }
}
