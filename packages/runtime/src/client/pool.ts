/**
 * @module client/pool
 * The connection pools of one transport: keep-alive agents (HTTP, HTTPS, or a proxy's agent when the kubeconfig or
 * the environment names one), one pool per client certificate.
 *
 * Guarantees:
 * - Connections keep alive, and send TCP keep-alive probes after `KEEPALIVE_MS` of silence.
 * - A rotated client certificate moves new requests to a new pool; leases (requests and watches) already under way
 *   finish on the old one, which is closed once the last of them is released. A lease is released once, however often
 *   `release()` is called.
 * - `close()` closes every pool, the retired ones included (requests still under way fail).
 * - A proxy's agent class is loaded once, before the first request; a failure to load it is reported by every
 *   `leaser()` call, never as an unhandled rejection.
 */
import type { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { http } from '../internal/http.ts';
import { proxyAgentFactory } from './proxy.ts';

/** TCP keep-alive probes start after this much idle time on a connection. */
export const KEEPALIVE_MS = 15_000;

/** One request's use of a pool: the agent to send through, and `release()` once the response closed. */
export interface Lease {
  /** The agent of the pool (connections with the lease's certificate). */
  readonly agent: Agent;
  /** Ends the lease (idempotent); the last lease of a retired pool closes it. */
  release(): void;
}

/** One connection pool, with the client certificate it presents and the requests still using it. */
interface Pool {
  readonly agent: Agent;
  readonly cert: string | undefined;
  active: number;
  retired: boolean;
}

/** The pools of one server: the current one (by client certificate) and the retired ones still in use. */
export class ConnectionPools {
  #pool: Pool | undefined;
  readonly #retired = new Set<Pool>();
  /** Makes the agent of a new pool (a proxy's agent class is loaded once, before the first request). */
  readonly #agents: Promise<() => Agent>;

  constructor(server: URL, proxyUrl: string | undefined) {
    const agentOptions = { keepAlive: true, keepAliveMsecs: KEEPALIVE_MS };
    this.#agents =
      proxyUrl !== undefined
        ? proxyAgentFactory(proxyUrl, agentOptions)
        : Promise.resolve(
            server.protocol === 'http:' ? () => new http.Agent(agentOptions) : () => new HttpsAgent(agentOptions),
          );
    this.#agents.catch(() => {}); // reported by the first request
  }

  /**
   * Resolves, once the agents can be made, with the function that leases a connection of the pool presenting `cert`
   * (a pool with another certificate is retired: closed once idle).
   */
  async leaser(): Promise<(cert: string | undefined) => Lease> {
    const newAgent = await this.#agents;
    return (cert) => this.#lease(this.#poolFor(cert, newAgent));
  }

  /** Closes every connection (requests still under way fail). */
  close(): void {
    this.#pool?.agent.destroy();
    this.#pool = undefined;
    for (const p of this.#retired) p.agent.destroy();
    this.#retired.clear();
  }

  #poolFor(cert: string | undefined, newAgent: () => Agent): Pool {
    const current = this.#pool;
    if (current && current.cert === cert) return current;
    if (current) {
      current.retired = true;
      if (current.active === 0) current.agent.destroy();
      else this.#retired.add(current);
    }
    const created: Pool = { agent: newAgent(), cert, active: 0, retired: false };
    this.#pool = created;
    return created;
  }

  #lease(pool: Pool): Lease {
    pool.active += 1;
    let released = false;
    return {
      agent: pool.agent,
      release: () => {
        if (released) return;
        released = true;
        pool.active -= 1;
        if (pool.retired && pool.active === 0) {
          pool.agent.destroy();
          this.#retired.delete(pool);
        }
      },
    };
  }
}
