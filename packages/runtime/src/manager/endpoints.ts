/**
 * @module manager/endpoints
 * The manager's two HTTP servers: `/metrics` (HTTPS with authentication by default, see manager/metricsserving.ts)
 * and the health probes `/healthz` + `/readyz`; each can be turned off with the bind address `0`.
 *
 * Guarantees: `start` either leaves every enabled server listening or none (a server that cannot listen closes those
 * already listening and releases the metrics certificate) and then rejects with a `ManagerError`:
 * `MetricsCertificateUnreadable`, `MetricsBindFailed` or `ProbeBindFailed`. `close` closes the servers, `release`
 * stops watching the metrics certificate.
 */

import type { Client } from '../client/client.ts';
import type { Logger } from '../logger.ts';
import type { Metrics } from '../metrics.ts';
import { ManagerError } from './errors.ts';
import { MetricsAuthError } from './metricsauth.ts';
import { type MetricsServingOptions, metricsServer } from './metricsserving.ts';
import { type CheckSet, HttpEndpoints } from './server.ts';

/** What the servers serve, and how. */
export interface EndpointsOptions {
  /** How /metrics is served (`bindAddress` `0`: not at all). */
  readonly metrics: MetricsServingOptions;
  /** The health server's bind address (`0`: off). */
  readonly healthBindAddress: string;
  /** The metrics /metrics serves. */
  readonly registry: Metrics;
  /** The checks of `/healthz` and `/readyz`. */
  readonly checks: readonly [CheckSet, CheckSet];
  /** The client of the metrics endpoint's TokenReviews and SubjectAccessReviews. */
  readonly client: Client;
  /** Where the servers log. */
  readonly log: Logger;
}

/** The metrics and health servers of one manager. */
export class ManagerEndpoints {
  readonly #o: EndpointsOptions;
  readonly #listening: HttpEndpoints[] = [];
  #release: () => void = () => {};
  #metrics: HttpEndpoints | undefined;
  #health: HttpEndpoints | undefined;

  constructor(options: EndpointsOptions) {
    this.#o = options;
  }

  /** `host:port` the metrics server listens on (after start). */
  get metricsAddress(): string | undefined {
    return this.#metrics?.address;
  }

  /** `host:port` the health server listens on (after start; undefined when off). */
  get healthAddress(): string | undefined {
    return this.#health?.address;
  }

  /** True when a server listens. */
  get listening(): boolean {
    return this.#listening.length > 0;
  }

  /** Listens with every enabled server, or with none (see the module comment). */
  async start(): Promise<void> {
    if (this.#o.metrics.bindAddress !== '0') await this.#makeMetricsServer();
    if (this.#o.healthBindAddress !== '0')
      this.#health = new HttpEndpoints(this.#o.healthBindAddress, [...this.#o.checks]);
    for (const [s, code] of [
      [this.#metrics, 'MetricsBindFailed'],
      [this.#health, 'ProbeBindFailed'],
    ] as const) {
      if (!s) continue;
      try {
        await s.start();
        this.#listening.push(s);
      } catch (err) {
        await this.close();
        this.#release(); // the certificate watcher of a server that never listened
        throw new ManagerError(code, `cannot listen: ${describe(err)}`, { cause: err });
      }
    }
    const scheme = this.#metrics?.secure ? 'https (authenticated)' : 'http';
    this.#o.log.info(
      {
        metrics: this.metricsAddress ? `${scheme} ${this.metricsAddress}` : 'off',
        health: this.healthAddress ?? 'off',
      },
      'serving',
    );
  }

  /** Closes the servers that listen. */
  async close(): Promise<void> {
    await Promise.all(this.#listening.map((s) => s.stop()));
  }

  /** Stops watching the metrics certificate. */
  release(): void {
    this.#release();
  }

  async #makeMetricsServer(): Promise<void> {
    const registry = this.#o.registry;
    const endpoint = {
      path: '/metrics',
      handle: async () => ({ status: 200, contentType: registry.registry.contentType, body: registry.text() }),
    };
    try {
      const m = await metricsServer(this.#o.metrics, endpoint, { client: this.#o.client, log: this.#o.log });
      this.#metrics = m.server;
      this.#release = m.release;
    } catch (err) {
      if (err instanceof MetricsAuthError && err.code === 'CertificateUnreadable') {
        throw new ManagerError('MetricsCertificateUnreadable', err.message, { cause: err });
      }
      throw new ManagerError('MetricsBindFailed', `cannot serve /metrics: ${describe(err)}`, { cause: err });
    }
  }
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
