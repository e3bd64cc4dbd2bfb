/**
 * @module cache/staleness
 * Stale-cache detection, as Kubernetes 1.36's checks of an informer's last synced resourceVersion (KEP-5647): a probe
 * that notices a cache that stopped advancing while the apiserver moved on, reports it, and has it relisted.
 *
 * Every `intervalMs` (default 30 s, jittered) the probe reads the apiserver's current resourceVersion with a one-item
 * list of the reflector's resource and namespace (no selectors, one page of one item: the cheapest consistent read;
 * it also makes the apiserver's watch cache catch up with etcd). A healthy watch reaches that resourceVersion within
 * one watch lifetime: by its events, or by the bookmark the apiserver sends shortly before the watch's timeout (at
 * most 45 s), also on a resource nobody writes. A cache still behind a resourceVersion observed `afterMs` ago (default
 * 90 s: two watch lifetimes) is stale.
 *
 * Guarantees:
 * - A stale cache is reported — `opkit_watch_stale_total{resource}`, a warn log line with the cache's and the server's
 *   resourceVersions and for how long, and `stale` (readiness fails) until the relist is stored — and relisted in
 *   pages: lists are not the path the watch events failed to come by (a silent connection, a stuck watch cache, an
 *   intermediary that holds watch streams). A silent connection alone is caught sooner by the watch's deadline
 *   (cache/reflector.ts): this probe is for a cache whose watches end on time and still bring nothing.
 * - No verdict on an idle resource that is healthy: its bookmarks carry the server's resourceVersion (checked on a real
 *   apiserver with other kinds changing, packages/runtime/test/staleness.test.ts).
 * - The probe asks nothing before the reflector has synced or while a relist is due. A failed probe is logged at debug
 *   level only (the reflector's own errors report an outage) and judges nothing. resourceVersions that are not decimal
 *   integers (a server without KEP-5504's comparable resourceVersions) turn the probe off, logged once.
 * Caveat: it costs one list request of one item per reflector every `intervalMs`.
 */
import type { Client } from '../client/client.ts';
import type { Kind, KubeObject } from '../client/resource.ts';
import { messageOf } from '../errors.ts';
import { sleep } from '../internal/sleep.ts';
import type { Logger } from '../logger.ts';

/** How a cache probes for staleness (`CacheOptions.staleness`); `false` turns it off. */
export interface StalenessOptions {
  /** How often the apiserver's resourceVersion is read, per watch (default 30 s). */
  readonly intervalMs?: number;
  /** How long the cache may stay behind a resourceVersion the apiserver had before it is stale (default 90 s). */
  readonly afterMs?: number;
}

export const DEFAULT_STALENESS_INTERVAL_MS = 30_000;
export const DEFAULT_STALE_AFTER_MS = 90_000;

/** What the probe found: the cache behind `serverResourceVersion` for `behindMs`. */
export interface StaleVerdict {
  readonly cacheResourceVersion: string;
  readonly serverResourceVersion: string;
  readonly behindMs: number;
}

const DECIMAL = /^[0-9]{1,30}$/;

/**
 * The judgement, without I/O or timers: the apiserver's resourceVersions observed (those the cache has not reached),
 * and whether the cache is behind one observed `afterMs` ago or earlier.
 */
export class StalenessJudge {
  readonly #afterMs: number;
  /** Observations the cache had not reached when last asked, oldest first (resourceVersions ascending). */
  #pending: { readonly at: number; readonly rv: bigint; readonly text: string }[] = [];
  /** Set when a resourceVersion was not a decimal integer: nothing can be judged. */
  incomparable = false;

  constructor(afterMs: number) {
    this.#afterMs = afterMs;
  }

  /** The apiserver was at `rv` at time `at` (ms). */
  observe(at: number, rv: string): void {
    if (!DECIMAL.test(rv)) {
      this.incomparable = true;
      return;
    }
    const value = BigInt(rv);
    const last = this.#pending.at(-1);
    if (last && last.rv >= value) return;
    this.#pending.push({ at, rv: value, text: rv });
  }

  /** Whether a cache at `cacheRv` is stale at time `at`; observations it reached are dropped. */
  verdict(at: number, cacheRv: string | undefined): StaleVerdict | undefined {
    if (cacheRv === undefined) return undefined;
    if (!DECIMAL.test(cacheRv)) {
      this.incomparable = true;
      return undefined;
    }
    const cache = BigInt(cacheRv);
    while (this.#pending.length > 0 && (this.#pending[0]?.rv ?? 0n) <= cache) this.#pending.shift();
    const oldest = this.#pending[0];
    if (!oldest || at - oldest.at < this.#afterMs) return undefined;
    return { cacheResourceVersion: cacheRv, serverResourceVersion: oldest.text, behindMs: at - oldest.at };
  }

  /** Forgets every observation (the cache is being relisted). */
  reset(): void {
    this.#pending = [];
  }
}

/** What the probe watches and acts on: one reflector. */
export interface StaleTarget {
  /** Whether its first list is stored. */
  synced(): boolean;
  /** Whether a relist is due (nothing to judge until it is stored). */
  relisting(): boolean;
  /** The resourceVersion of its last list, event or bookmark. */
  resourceVersion(): string | undefined;
  /** Reports the verdict and relists. */
  stale(verdict: StaleVerdict): void;
}

/** What the probe of one reflector reads with and reports to. */
export interface StalenessProbeOptions {
  readonly client: Client;
  readonly resource: Kind<KubeObject>;
  readonly namespace: string | undefined;
  readonly log: Logger;
  readonly options: StalenessOptions;
}

/** Probes until `signal` aborts (see the module comment). Never rejects. */
export async function probeStaleness(
  target: StaleTarget,
  o: StalenessProbeOptions,
  signal: AbortSignal,
): Promise<void> {
  const intervalMs = o.options.intervalMs ?? DEFAULT_STALENESS_INTERVAL_MS;
  const judge = new StalenessJudge(o.options.afterMs ?? DEFAULT_STALE_AFTER_MS);
  while (!signal.aborted) {
    await sleep(intervalMs * (0.9 + Math.random() * 0.2), signal);
    if (signal.aborted) return;
    if (!target.synced() || target.relisting()) {
      judge.reset();
      continue;
    }
    let rv: string | undefined;
    try {
      rv = await serverResourceVersion(o, signal);
    } catch (err) {
      if (!signal.aborted) o.log.debug({ err: messageOf(err) }, 'stale-cache probe: the read failed');
      continue;
    }
    const now = performance.now();
    const verdict = judge.verdict(now, target.resourceVersion());
    if (rv !== undefined) judge.observe(now, rv);
    if (judge.incomparable) {
      o.log.info({ resourceVersion: rv }, 'resourceVersions are not decimal integers here: stale-cache probe off');
      return;
    }
    if (verdict && !target.relisting()) {
      judge.reset();
      target.stale(verdict);
    }
  }
}

/** The apiserver's current resourceVersion, from the first page (of one item) of a consistent list. */
async function serverResourceVersion(o: StalenessProbeOptions, signal: AbortSignal): Promise<string | undefined> {
  const pages = o.client.listPages(o.resource, {
    ...(o.namespace ? { namespace: o.namespace } : {}),
    pageSize: 1,
    signal,
  });
  for await (const page of pages) return page.metadata.resourceVersion || undefined;
  return undefined;
}
